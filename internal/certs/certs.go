package certs

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
)

// MinVersion is the oldest TLS version ejserver speaks or accepts, on every hop.
const MinVersion = tls.VersionTLS12

// LoadPool reads a PEM file of one or more CA certificates.
func LoadPool(path string) (*x509.CertPool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParsePool(b)
}

// ParsePool parses PEM CA certificates (a bundle). Anything but CERTIFICATE blocks, or no certificate at
// all, is an error.
func ParsePool(pemBytes []byte) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	n := 0
	rest := pemBytes
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("a %s block where CA certificates were expected", block.Type)
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("certificate %d: %w", n+1, err)
		}
		pool.AddCert(c)
		n++
	}
	if n == 0 {
		return nil, errors.New("no PEM certificate found")
	}
	return pool, nil
}

// ParseKeyPair parses a PEM certificate (chain) and its PEM private key, checking that the key matches the
// certificate. Errors never quote the key.
func ParseKeyPair(certPEM, keyPEM []byte) (tls.Certificate, error) {
	if b, _ := pem.Decode(certPEM); b == nil {
		return tls.Certificate{}, errors.New("the certificate is not PEM")
	}
	if b, _ := pem.Decode(keyPEM); b == nil {
		return tls.Certificate{}, errors.New("the key is not PEM")
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, keyPairError(err)
	}
	return pair, nil
}

// keyPairError rewords crypto/tls's errors, which may quote neither key nor certificate but are terse.
func keyPairError(err error) error {
	msg := err.Error()
	switch msg {
	case "tls: private key does not match public key":
		return errors.New("the key does not match the certificate")
	}
	return errors.New(msg)
}

// LoadKeyPair reads a PEM certificate file and its PEM key file.
func LoadKeyPair(certFile, keyFile string) (tls.Certificate, error) {
	c, err := os.ReadFile(certFile)
	if err != nil {
		return tls.Certificate{}, err
	}
	k, err := os.ReadFile(keyFile)
	if err != nil {
		return tls.Certificate{}, err
	}
	return ParseKeyPair(c, k)
}

// ClientFiles names the PEM files of a TLS client: the CA to verify the server with (empty: the system's
// roots), and a client certificate and key for servers that ask for one (both or neither).
type ClientFiles struct {
	CA, Cert, Key string
	// ServerName overrides the name the server's certificate is checked against (default: the host dialed).
	ServerName string
}

// Enabled reports whether any file is named.
func (f ClientFiles) Enabled() bool { return f.CA != "" || f.Cert != "" || f.Key != "" }

// ClientConfig reads the files into a client tls.Config: TLS 1.2 or later, the server verified against CA.
// Errors say which file failed (FileError).
func ClientConfig(f ClientFiles) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: MinVersion, ServerName: f.ServerName}
	if f.CA != "" {
		pool, err := LoadPool(f.CA)
		if err != nil {
			return nil, &FileError{Which: "ca", Path: f.CA, Err: err}
		}
		cfg.RootCAs = pool
	}
	switch {
	case f.Cert != "" && f.Key == "":
		return nil, &FileError{Which: "key", Err: errors.New("a client certificate needs its key")}
	case f.Cert == "" && f.Key != "":
		return nil, &FileError{Which: "cert", Err: errors.New("a client key needs its certificate")}
	case f.Cert != "":
		pair, err := LoadKeyPair(f.Cert, f.Key)
		if err != nil {
			return nil, &FileError{Which: "cert", Path: f.Cert, Err: err}
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// FileError is a TLS file that could not be used; Which is "ca", "cert" or "key", so a caller names its flag.
type FileError struct {
	Which, Path string
	Err         error
}

func (e *FileError) Error() string {
	if e.Path == "" {
		return e.Err.Error()
	}
	return fmt.Sprintf("%s: %v", e.Path, e.Err)
}

func (e *FileError) Unwrap() error { return e.Err }

// ServerConfig is the API's tls.Config: TLS 1.2 or later, the certificate from get (a Reloader's
// GetCertificate), and, with clientCAs, client certificates verified when given (VerifyClientCertIfGiven: a
// client without one still connects and authenticates with a token).
func ServerConfig(get func(*tls.ClientHelloInfo) (*tls.Certificate, error), clientCAs *x509.CertPool) *tls.Config {
	cfg := &tls.Config{MinVersion: MinVersion, GetCertificate: get}
	if clientCAs != nil {
		cfg.ClientCAs = clientCAs
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	}
	return cfg
}

// CertName is the name a client certificate is known by, the NAME of a tokens-file line: its first DNS SAN
// (e.g. deployer.payments.example.com), else its subject's common name, else its first URI SAN (e.g.
// spiffe://cluster/ns/payments/sa/deployer). DNS names and common names fit a tokens-file NAME as they are;
// a URI comes last because it rarely does. "" when the certificate has none of them.
func CertName(c *x509.Certificate) string {
	switch {
	case c == nil:
		return ""
	case len(c.DNSNames) > 0:
		return c.DNSNames[0]
	case c.Subject.CommonName != "":
		return c.Subject.CommonName
	case len(c.URIs) > 0:
		return c.URIs[0].String()
	}
	return ""
}

// VerifiedClientName is CertName of the leaf of a connection's first verified chain, "" when the client sent
// no certificate (or it was not verified).
func VerifiedClientName(st *tls.ConnectionState) string {
	if st == nil || len(st.VerifiedChains) == 0 || len(st.VerifiedChains[0]) == 0 {
		return ""
	}
	return CertName(st.VerifiedChains[0][0])
}

// LoadLeaf reads the first certificate of a PEM file (the leaf of a chain).
func LoadLeaf(path string) (*x509.Certificate, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	for {
		var block *pem.Block
		block, b = pem.Decode(b)
		if block == nil {
			return nil, errors.New("no PEM certificate found")
		}
		if block.Type == "CERTIFICATE" {
			return x509.ParseCertificate(block.Bytes)
		}
	}
}
