// Package testca makes throwaway certificate authorities for tests (crypto/x509, ECDSA P-256): a CA, server
// certificates for loopback, client certificates, all as PEM bytes or files. Keys are PKCS#8 ("PRIVATE
// KEY"), which Go, ZooKeeper's PEM key stores and OpenSSL all read.
package testca

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// CA is a certificate authority that signs test certificates.
type CA struct {
	Cert    *x509.Certificate
	CertPEM []byte
	key     *ecdsa.PrivateKey
}

// Pair is a certificate and its key, PEM encoded.
type Pair struct {
	Cert    *x509.Certificate
	CertPEM []byte
	KeyPEM  []byte
}

// Names are what a certificate is issued for.
type Names struct {
	CommonName string
	DNS        []string
	IPs        []net.IP
	URIs       []string
	// Client makes a client certificate (ExtKeyUsageClientAuth) rather than a server one.
	Client bool
	// NotAfter defaults to a day from now.
	NotAfter time.Time
}

var serial atomic.Int64

// New makes a CA named name.
func New(t testing.TB, name string) *CA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(serial.Add(1)),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &CA{Cert: cert, CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), key: key}
}

// Issue signs a certificate for n.
func (ca *CA) Issue(t testing.TB, n Names) Pair {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	notAfter := n.NotAfter
	if notAfter.IsZero() {
		notAfter = time.Now().Add(24 * time.Hour)
	}
	usage := x509.ExtKeyUsageServerAuth
	if n.Client {
		usage = x509.ExtKeyUsageClientAuth
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial.Add(1)),
		Subject:      pkix.Name{CommonName: n.CommonName},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		DNSNames:     n.DNS,
		IPAddresses:  n.IPs,
	}
	for _, u := range n.URIs {
		parsed, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		tmpl.URIs = append(tmpl.URIs, parsed)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return Pair{Cert: cert, CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})}
}

// Loopback is a server certificate for localhost, 127.0.0.1 and ::1.
func (ca *CA) Loopback(t testing.TB, cn string) Pair {
	return ca.Issue(t, Names{CommonName: cn, DNS: []string{"localhost"},
		IPs: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}})
}

// Client is a client certificate with common name cn.
func (ca *CA) Client(t testing.TB, cn string) Pair {
	return ca.Issue(t, Names{CommonName: cn, Client: true})
}

// WriteFile writes the CA certificate to dir/name and returns its path.
func (ca *CA) WriteFile(t testing.TB, dir, name string) string {
	return write(t, dir, name, ca.CertPEM)
}

// WriteFiles writes the pair to dir/{base}.crt and dir/{base}.key and returns their paths.
func (p Pair) WriteFiles(t testing.TB, dir, base string) (certFile, keyFile string) {
	return write(t, dir, base+".crt", p.CertPEM), write(t, dir, base+".key", p.KeyPEM)
}

func write(t testing.TB, dir, name string, b []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
