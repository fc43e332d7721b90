package certs

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"syscall"
	"time"
)

// Reloader serves a certificate and key from two PEM files and picks up new files without a restart: at each
// handshake it stats both files and parses them again only when either changed (size, modification time or
// inode: cert-manager's Secret volumes swap a symlink, which changes the inode). Connections already open keep
// the certificate they were made with; the next handshake gets the new one. A pair that does not parse
// (half-written, or a key of another certificate) is logged once per change and the previous pair kept.
type Reloader struct {
	certFile, keyFile string
	log               *slog.Logger

	mu      sync.Mutex
	stamp   [2]fileStamp
	current *tls.Certificate
	failed  [2]fileStamp // the stamps of the last pair that failed, so it is logged once
	reloads int
}

type fileStamp struct {
	size  int64
	mtime time.Time
	ino   uint64
}

func stampOf(path string) (fileStamp, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}, err
	}
	st := fileStamp{size: fi.Size(), mtime: fi.ModTime()}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.ino = sys.Ino
	}
	return st, nil
}

// NewReloader loads the pair once: an error here is a start-up error (the files are missing or do not match).
func NewReloader(certFile, keyFile string, log *slog.Logger) (*Reloader, error) {
	if log == nil {
		log = slog.Default()
	}
	r := &Reloader{certFile: certFile, keyFile: keyFile, log: log}
	cs, err := stampOf(certFile)
	if err != nil {
		return nil, &FileError{Which: "cert", Path: certFile, Err: err}
	}
	ks, err := stampOf(keyFile)
	if err != nil {
		return nil, &FileError{Which: "key", Path: keyFile, Err: err}
	}
	pair, err := LoadKeyPair(certFile, keyFile)
	if err != nil {
		return nil, &FileError{Which: "cert", Path: certFile, Err: err}
	}
	r.current, r.stamp = &pair, [2]fileStamp{cs, ks}
	return r, nil
}

// GetCertificate is the tls.Config hook: the current pair, reloaded first if the files changed.
func (r *Reloader) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.refreshLocked()
	return r.current, nil
}

// Reloads counts the successful reloads since start.
func (r *Reloader) Reloads() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reloads
}

func (r *Reloader) refreshLocked() {
	cs, err1 := stampOf(r.certFile)
	ks, err2 := stampOf(r.keyFile)
	if err1 != nil || err2 != nil {
		return // mid-swap: keep the current pair, look again at the next handshake
	}
	now := [2]fileStamp{cs, ks}
	if now == r.stamp {
		return
	}
	pair, err := LoadKeyPair(r.certFile, r.keyFile)
	if err != nil {
		if now != r.failed {
			r.failed = now
			r.log.Warn("TLS certificate files changed but do not load; serving the previous certificate",
				"cert", r.certFile, "key", r.keyFile, "err", err)
		}
		return
	}
	r.current, r.stamp = &pair, now
	r.reloads++
	r.log.Info("TLS certificate reloaded", "cert", r.certFile, "subject", subject(&pair))
}

func subject(c *tls.Certificate) string {
	if c.Leaf != nil {
		return c.Leaf.Subject.String()
	}
	return ""
}

// String is for logs: the files, never their contents.
func (r *Reloader) String() string { return fmt.Sprintf("cert %s, key %s", r.certFile, r.keyFile) }
