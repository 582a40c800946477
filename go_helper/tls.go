package livetrace

import (
	"crypto/tls"
	"errors"
	"fmt"
	"os"
)

// serverTLSConfig is the configuration a tls: address serves with: the
// caller's, or one made from the PEM files LIVETRACE_TLS_CERT and
// LIVETRACE_TLS_KEY name. Serving TLS without a certificate is an error,
// not a fallback to clear text.
func serverTLSConfig(given *tls.Config) (*tls.Config, error) {
	if given != nil {
		if len(given.Certificates) == 0 && given.GetCertificate == nil && given.GetConfigForClient == nil {
			return nil, errors.New("Options.TLSConfig has no certificate")
		}
		cfg := given.Clone()
		if cfg.MinVersion == 0 {
			cfg.MinVersion = tls.VersionTLS12
		}
		return cfg, nil
	}
	certFile, keyFile := os.Getenv("LIVETRACE_TLS_CERT"), os.Getenv("LIVETRACE_TLS_KEY")
	if certFile == "" || keyFile == "" {
		return nil, errors.New("a tls: address needs a certificate: set LIVETRACE_TLS_CERT and LIVETRACE_TLS_KEY " +
			"to PEM files (or pass Options.TLSConfig)")
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("cannot load LIVETRACE_TLS_CERT=%s and LIVETRACE_TLS_KEY=%s: %v", certFile, keyFile, err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}
