package api

import (
	"github.com/labstack/echo/v4"

	"github.com/ejserver/ejserver/internal/certs"
)

// clientCertName runs before the token check on every route: it names the request's verified client
// certificate, if any. An unverified certificate never reaches here: the TLS handshake (VerifyClientCertIfGiven)
// refuses one that does not chain to --tls-client-ca, and a plain-HTTP request has none. The name (the key
// ClientCertNameKey, declared with the token check that reads it) is the certificate's first DNS SAN, else its
// subject's common name, else its first URI SAN (certs.CertName).
func clientCertName() echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if name := certs.VerifiedClientName(c.Request().TLS); name != "" {
				c.Set(ClientCertNameKey, name)
			}
			return next(c)
		}
	}
}
