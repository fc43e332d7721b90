package notify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/clock"
	"github.com/ejserver/ejserver/internal/cluster"
	"github.com/ejserver/ejserver/internal/metawatch"
)

// ChannelRegistry is what the Store needs of ZooKeeper (cluster.Registry satisfies it).
type ChannelRegistry interface {
	ChannelNodes(watch bool) ([]cluster.ChannelNode, <-chan struct{}, error)
	ReadChannel(name string) (cluster.ChannelNode, error)
	CreateChannel(name string, data []byte) (int32, error)
	SetChannel(name string, data []byte, version int32) (int32, error)
	DeleteChannel(name string, version int32) error
}

var _ ChannelRegistry = (*cluster.Registry)(nil)

// StoredChannel is a channel as stored, with its node version (the API's ETag).
type StoredChannel struct {
	Channel
	Version int32
}

// StoreConfig configures a Store.
type StoreConfig struct {
	Registry ChannelRegistry
	Logger   *slog.Logger
	Clock    clock.Clock
	// OnRemoved, if set, is told the name of each channel that left the cache (deleted on any peer), e.g. to
	// drop its metric series.
	OnRemoved func(name string)
	// RetryPause is how long the watch loop waits after a failed read of the channels (default 1s).
	RetryPause time.Duration
}

// Store keeps the cluster's channels: writes go to ZooKeeper; every peer keeps a cache fresh by watches, so
// delivery looks channels up without a round trip. API reads go to ZooKeeper (read-your-writes, ETags).
type Store struct {
	reg  ChannelRegistry
	log  *slog.Logger
	gone func(name string)

	mu    sync.RWMutex
	cache map[string]Channel
	loop  *metawatch.Loop
}

// NewStore returns a store; Start begins watching.
func NewStore(cfg StoreConfig) *Store {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Store{reg: cfg.Registry, log: cfg.Logger, gone: cfg.OnRemoved, cache: map[string]Channel{}}
	s.loop = metawatch.New(metawatch.Config{What: "notification channels", Read: cfg.Registry.ChannelNodes,
		Apply: s.replace, Clock: cfg.Clock, Logger: cfg.Logger, RetryPause: cfg.RetryPause})
	return s
}

// Start loads the channels and keeps watching them; it returns after the first load, or when ctx ends
// (the loop goes on loading in the background).
func (s *Store) Start(ctx context.Context) error { return s.loop.Start(ctx) }

// Stop ends the watch loop; safe twice and before Start.
func (s *Store) Stop() { s.loop.Stop() }

func (s *Store) replace(nodes []cluster.ChannelNode) {
	next := make(map[string]Channel, len(nodes))
	for _, n := range nodes {
		c, err := decodeStored(n)
		if err != nil {
			s.log.Error("notification channel not usable", "channel", n.Name, "err", err)
			continue
		}
		next[n.Name] = c.Channel
	}
	s.mu.Lock()
	prev := s.cache
	s.cache = next
	s.mu.Unlock()
	if s.gone == nil {
		return
	}
	for name := range prev {
		if _, ok := next[name]; !ok {
			s.gone(name)
		}
	}
}

// Lookup returns a channel from the cache.
func (s *Store) Lookup(name string) (Channel, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	c, ok := s.cache[name]
	return c, ok
}

// Default returns the cluster's default channel of kind, from the cache (ElasticJob's jobErrorHandlerType
// EMAIL, DINGTALK and WECHAT notify the default email, dingtalk and wecom channel). Should two claim it
// (concurrent writes on two peers), the first by name wins.
func (s *Store) Default(kind ChannelKind) (Channel, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var best Channel
	found := false
	for _, c := range s.cache {
		if c.Kind == kind && c.Default && (!found || c.Name < best.Name) {
			best, found = c, true
		}
	}
	return best, found
}

func decodeStored(n cluster.ChannelNode) (StoredChannel, error) {
	var c Channel
	if err := json.Unmarshal(n.Data, &c); err != nil {
		return StoredChannel{}, fmt.Errorf("channel node %q is not readable: %w", n.Name, err)
	}
	c.Name = n.Name
	return StoredChannel{Channel: c, Version: n.Version}, nil
}

// storeErr maps a registry error to the domain's.
func storeErr(name string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, cluster.ErrNoChannel):
		return ejserver.Errorf(ejserver.ENOTFOUND, "channel %q not found", name)
	case errors.Is(err, cluster.ErrChannelExists):
		return ejserver.Errorf(ejserver.ECONFLICT, "channel %q exists already (replace it with PUT)", name)
	case errors.Is(err, cluster.ErrChannelChanged):
		return ejserver.Errorf(ejserver.EPRECONDITION, "channel %q changed since the version you sent", name)
	}
	var e *ejserver.Error
	if errors.As(err, &e) {
		return err
	}
	return ejserver.Unavailable(err, "the registry is unavailable")
}

// List reads every channel from ZooKeeper, by name.
func (s *Store) List(context.Context) ([]StoredChannel, error) {
	nodes, _, err := s.reg.ChannelNodes(false)
	if err != nil {
		return nil, storeErr("", err)
	}
	out := make([]StoredChannel, 0, len(nodes))
	for _, n := range nodes {
		c, err := decodeStored(n)
		if err != nil {
			s.log.Error("notification channel not usable", "channel", n.Name, "err", err)
			continue
		}
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b StoredChannel) int { return compareStrings(a.Name, b.Name) })
	return out, nil
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Get reads one channel from ZooKeeper.
func (s *Store) Get(_ context.Context, name string) (StoredChannel, error) {
	if err := ValidateChannelName(name); err != nil {
		return StoredChannel{}, ejserver.Errorf(ejserver.ENOTFOUND, "channel %q not found", name)
	}
	n, err := s.reg.ReadChannel(name)
	if err != nil {
		return StoredChannel{}, storeErr(name, err)
	}
	c, err := decodeStored(n)
	if err != nil {
		return StoredChannel{}, &ejserver.Error{Code: ejserver.EINTERNAL, Message: "the stored channel is not readable", Err: err}
	}
	return c, nil
}

// Create validates and stores a new channel.
func (s *Store) Create(ctx context.Context, c Channel) (StoredChannel, error) {
	c.clearHas()
	data, err := s.prepare(ctx, &c)
	if err != nil {
		return StoredChannel{}, err
	}
	v, err := s.reg.CreateChannel(c.Name, data)
	if err != nil {
		return StoredChannel{}, storeErr(c.Name, err)
	}
	return StoredChannel{Channel: c, Version: v}, nil
}

// prepare validates c, fills its defaults, checks its default flag and returns what is stored.
func (s *Store) prepare(ctx context.Context, c *Channel) ([]byte, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	c.Normalize()
	if err := s.checkDefault(ctx, *c); err != nil {
		return nil, err
	}
	return json.Marshal(c)
}

// VersionCheck decides whether a replace may apply to the stored version (If-Match); nil accepts any.
type VersionCheck func(version int32) bool

// Replace replaces channel name: secrets left out keep their stored values; check, if set, must accept the
// stored version, which must not change before the write (else EPRECONDITION).
func (s *Store) Replace(ctx context.Context, name string, c Channel, check VersionCheck) (StoredChannel, error) {
	if c.Name == "" {
		c.Name = name
	}
	if c.Name != name {
		return StoredChannel{}, ejserver.Invalid("name", "is %q but the URL names %q: a channel cannot be renamed (create the new one, then delete the old)", c.Name, name)
	}
	old, err := s.Get(ctx, name)
	if err != nil {
		return StoredChannel{}, err
	}
	if check != nil && !check(old.Version) {
		return StoredChannel{}, ejserver.Errorf(ejserver.EPRECONDITION, "channel %q changed since the version you sent (its ETag is now \"%d\")", name, old.Version)
	}
	c.KeepSecrets(old.Channel)
	data, err := s.prepare(ctx, &c)
	if err != nil {
		return StoredChannel{}, err
	}
	v, err := s.reg.SetChannel(name, data, old.Version)
	if err != nil {
		return StoredChannel{}, storeErr(name, err)
	}
	return StoredChannel{Channel: c, Version: v}, nil
}

// Delete removes channel name.
func (s *Store) Delete(_ context.Context, name string) error {
	if err := ValidateChannelName(name); err != nil {
		return ejserver.Errorf(ejserver.ENOTFOUND, "channel %q not found", name)
	}
	return storeErr(name, s.reg.DeleteChannel(name, -1))
}

// checkDefault refuses a second default channel of a kind.
func (s *Store) checkDefault(ctx context.Context, c Channel) error {
	if !c.Default {
		return nil
	}
	all, err := s.List(ctx)
	if err != nil {
		return err
	}
	for _, o := range all {
		if o.Name != c.Name && o.Kind == c.Kind && o.Default {
			return ejserver.Invalid("default", "channel %q is the default %s channel already: unset its default first (one default per kind)", o.Name, c.Kind)
		}
	}
	return nil
}
