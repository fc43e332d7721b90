// Package certs holds ejserver's TLS plumbing for every hop: PEM files read into tls.Configs (the API's
// server side, with its certificate reloaded when cert-manager rewrites the files; the clients' side for the
// CLI, the Go client and ZooKeeper), and the name a verified client certificate is known by.
//
// The decisions are functions of values (CertName, ServerConfig, ClientConfig); the one piece of state is the
// Reloader, which compares the files' stat at each handshake (two stat calls, far cheaper than the handshake)
// and parses them again only when they changed. A half-rotated pair (the certificate written, the key not
// yet) fails to parse: the Reloader keeps serving the previous pair and tries again at the next handshake.
package certs
