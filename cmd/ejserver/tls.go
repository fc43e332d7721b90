package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"syscall"

	"github.com/ejserver/ejserver/internal/certs"
	"github.com/ejserver/ejserver/internal/cluster"
)

// tlsFiles are the PEM files of serve's TLS flags: the API's certificate, key and client CA, and ZooKeeper's
// client certificate, key and CA.
type tlsFiles struct {
	cert, key, clientCA string
	zkCert, zkKey, zkCA string
	zkServerName        string
}

func (t tlsFiles) api() bool { return t.cert != "" || t.key != "" || t.clientCA != "" }
func (t tlsFiles) zk() bool  { return t.zkCert != "" || t.zkKey != "" || t.zkCA != "" }

// tlsFlags declares serve's TLS flags on f.
func tlsFlags(f *envFlags) func() tlsFiles {
	cert := f.String("tls-cert", "", "PEM certificate (chain) of the API: with --tls-key the API serves HTTPS only (TLS 1.2+); the files are re-read at the next handshake after they change, as cert-manager rotates them")
	key := f.String("tls-key", "", "PEM private key of --tls-cert")
	clientCA := f.String("tls-client-ca", "", "PEM CA bundle: clients may present a certificate signed by it, named by its first DNS SAN, else its CN, else its first URI SAN, and mapped to the tokens-file line of that NAME")
	zkCert := f.String("zk-tls-cert", "", "PEM client certificate for ZooKeeper's secure client port (with --zk-tls-key; the server's ssl.clientAuth decides whether it is needed)")
	zkKey := f.String("zk-tls-key", "", "PEM private key of --zk-tls-cert")
	zkCA := f.String("zk-tls-ca", "", "PEM CA bundle that signed ZooKeeper's certificate; any --zk-tls-* flag makes every ZooKeeper connection TLS")
	zkName := f.String("zk-tls-server-name", "", "the name ZooKeeper's certificate is checked against (default: the host of each --zk address)")
	return func() tlsFiles {
		return tlsFiles{cert: *cert, key: *key, clientCA: *clientCA, zkCert: *zkCert, zkKey: *zkKey, zkCA: *zkCA, zkServerName: *zkName}
	}
}

// check is parse-time validation: pairs come together, a client CA needs a server certificate.
func (t tlsFiles) check() error {
	switch {
	case t.cert != "" && t.key == "":
		return errors.New("--tls-key: --tls-cert needs its key")
	case t.cert == "" && t.key != "":
		return errors.New("--tls-cert: --tls-key needs its certificate")
	case t.clientCA != "" && t.cert == "":
		return errors.New("--tls-client-ca: client certificates need the API on TLS (--tls-cert and --tls-key)")
	case t.zkCert != "" && t.zkKey == "":
		return errors.New("--zk-tls-key: --zk-tls-cert needs its key")
	case t.zkCert == "" && t.zkKey != "":
		return errors.New("--zk-tls-cert: --zk-tls-key needs its certificate")
	case t.zkServerName != "" && !t.zk():
		return errors.New("--zk-tls-server-name: needs --zk-tls-ca (or --zk-tls-cert)")
	}
	return nil
}

// apiTLS is the API's server tls.Config, nil for plain HTTP. Errors name the flag of the file that failed.
func (t tlsFiles) apiTLS(log *slog.Logger) (*tls.Config, error) {
	if !t.api() {
		return nil, nil
	}
	r, err := certs.NewReloader(t.cert, t.key, log)
	if err != nil {
		return nil, flagErr(err, "--tls-cert", "--tls-key", "--tls-cert")
	}
	var pool *x509.CertPool
	if t.clientCA != "" {
		if pool, err = certs.LoadPool(t.clientCA); err != nil {
			return nil, fmt.Errorf("--tls-client-ca: %s: %w", t.clientCA, err)
		}
	}
	return certs.ServerConfig(r.GetCertificate, pool), nil
}

// zkTLS is the client tls.Config of ZooKeeper connections, nil for plaintext.
func (t tlsFiles) zkTLS() (*tls.Config, error) {
	if !t.zk() {
		return nil, nil
	}
	cfg, err := certs.ClientConfig(certs.ClientFiles{CA: t.zkCA, Cert: t.zkCert, Key: t.zkKey, ServerName: t.zkServerName})
	if err != nil {
		return nil, flagErr(err, "--zk-tls-cert", "--zk-tls-key", "--zk-tls-ca")
	}
	return cfg, nil
}

// flagErr prefixes a certs.FileError with the flag of its file.
func flagErr(err error, certFlag, keyFlag, caFlag string) error {
	var fe *certs.FileError
	if !errors.As(err, &fe) {
		return err
	}
	flag := map[string]string{"cert": certFlag, "key": keyFlag, "ca": caFlag}[fe.Which]
	return fmt.Errorf("%s: %w", flag, err)
}

// zkTLSError names the flag behind a failed TLS handshake with ZooKeeper (cluster.ProbeTLS), so a wrong CA
// stops the start with an error that says what to fix.
func zkTLSError(err error) error {
	var te *cluster.TLSError
	if !errors.As(err, &te) {
		return err
	}
	var (
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
		rec      tls.RecordHeaderError
	)
	switch {
	case errors.As(err, &hostname):
		return fmt.Errorf("--zk-tls-server-name: ZooKeeper %s's certificate is not for that name (set --zk-tls-server-name to a name it holds): %w", te.Server, te.Err)
	case errors.As(err, &unknown), errors.As(err, &invalid):
		return fmt.Errorf("--zk-tls-ca: ZooKeeper %s's certificate is not trusted by that CA: %w", te.Server, te.Err)
	case errors.As(err, &rec):
		return fmt.Errorf("--zk: %s does not speak TLS (give ZooKeeper's secureClientPort): %w", te.Server, te.Err)
	case errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET):
		return fmt.Errorf("--zk: %s closed the connection during the TLS handshake (give ZooKeeper's secureClientPort): %w", te.Server, te.Err)
	case strings.Contains(err.Error(), "remote error"):
		return fmt.Errorf("--zk-tls-cert: ZooKeeper %s refused the handshake (does it need a client certificate its trust store holds?): %w", te.Server, te.Err)
	}
	return fmt.Errorf("--zk-tls-ca: %w", err)
}

// cliTLSError names the client command's flag of the TLS file that failed.
func cliTLSError(err error) error {
	return flagErr(err, "-client-cert", "-client-key", "-ca-file")
}
