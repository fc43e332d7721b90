package metrics

import (
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/ejserver/ejserver/internal/ratelog"
)

// scrapeErrorEvery is how often one kind of scrape error is written: a scrape that its client abandons (a
// Prometheus scrape timeout on a peer busy through a restart at 100,000 jobs) fails at every metric family
// it still has to send, and promhttp reports each one, 74 warnings a scrape.
const scrapeErrorEvery = 10 * time.Second

// maxScrapeErrorKinds bounds the kinds kept apart (promhttp has four messages); others share one warning,
// scrapeFailed, as does a line without a message.
const (
	maxScrapeErrorKinds = 8
	scrapeFailed        = "metrics scrape failed"
)

// scrapeErrorLog is promhttp's error log: each of its messages ("error encoding and sending metric family:",
// "error gathering metrics:"...) is a ratelog.Warning of its own, its error an attribute, so an abandoned scrape
// writes one line, and the next ones say how many they stand for.
type scrapeErrorLog struct {
	log *slog.Logger

	mu    sync.Mutex
	kinds map[string]*ratelog.Warning
}

func newScrapeErrorLog(log *slog.Logger) *scrapeErrorLog {
	return &scrapeErrorLog{log: log, kinds: make(map[string]*ratelog.Warning)}
}

// Println is promhttp.Logger's: v[0] is promhttp's message, the rest its error.
func (l *scrapeErrorLog) Println(v ...any) {
	msg, rest := scrapeFailed, v
	if len(v) > 0 {
		if s, ok := v[0].(string); ok {
			msg, rest = strings.TrimSuffix(strings.TrimSpace(s), ":"), v[1:]
		}
	}
	l.warning(msg).Warn("err", strings.TrimSpace(fmt.Sprintln(rest...)))
}

// warning returns msg's Warning, made at its first use; past maxScrapeErrorKinds messages share one.
func (l *scrapeErrorLog) warning(msg string) *ratelog.Warning {
	l.mu.Lock()
	defer l.mu.Unlock()
	if w := l.kinds[msg]; w != nil {
		return w
	}
	if len(l.kinds) >= maxScrapeErrorKinds {
		msg = scrapeFailed
		if w := l.kinds[msg]; w != nil {
			return w
		}
	}
	w := ratelog.New(l.log, nil, scrapeErrorEvery, msg)
	l.kinds[msg] = w
	return w
}
