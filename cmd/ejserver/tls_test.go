package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/ejserver/ejserver/internal/cluster"
)

func TestZKTLSErrorNamesTheFlag(t *testing.T) {
	wrap := func(err error) error { return &cluster.TLSError{Server: "10.0.0.5:2281", Err: err} }
	tests := []struct {
		name string
		err  error
		flag string
	}{
		{"unknown authority", wrap(&tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}), "--zk-tls-ca:"},
		{"expired", wrap(x509.CertificateInvalidError{Reason: x509.Expired}), "--zk-tls-ca:"},
		{"wrong name", wrap(x509.HostnameError{Certificate: &x509.Certificate{}, Host: "zk"}), "--zk-tls-server-name:"},
		{"client certificate refused", wrap(fmt.Errorf("remote error: tls: certificate required")), "--zk-tls-cert:"},
		{"plaintext port", wrap(tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}), "--zk:"},
		{"closed during the handshake", wrap(io.EOF), "--zk:"},
		{"not a TLS error", errors.New("other"), "other"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := zkTLSError(tt.err).Error(); !strings.HasPrefix(got, tt.flag) {
				t.Fatalf("%q, want it to start with %q", got, tt.flag)
			}
		})
	}
}

func TestTLSFlagsCheck(t *testing.T) {
	tests := []struct {
		name  string
		files tlsFiles
		flag  string
	}{
		{"none", tlsFiles{}, ""},
		{"api pair", tlsFiles{cert: "c", key: "k"}, ""},
		{"cert alone", tlsFiles{cert: "c"}, "--tls-key"},
		{"key alone", tlsFiles{key: "k"}, "--tls-cert"},
		{"client ca without tls", tlsFiles{clientCA: "ca"}, "--tls-client-ca"},
		{"zk ca alone", tlsFiles{zkCA: "ca"}, ""},
		{"zk cert alone", tlsFiles{zkCert: "c"}, "--zk-tls-key"},
		{"zk key alone", tlsFiles{zkKey: "k"}, "--zk-tls-cert"},
		{"zk server name alone", tlsFiles{zkServerName: "zk"}, "--zk-tls-server-name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.files.check()
			if tt.flag == "" && err != nil || tt.flag != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.flag+":")) {
				t.Fatalf("check() = %v, want an error naming %q", err, tt.flag)
			}
		})
	}
}
