package livetrace

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// selfSigned makes a certificate for 127.0.0.1 and writes it and its key
// as PEM files.
func selfSigned(t *testing.T) (cert tls.Certificate, pool *x509.CertPool, certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "livetrace test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		IsCA:         true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	pool.AddCert(parsed)
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert = tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	return cert, pool, certFile, keyFile
}

func dialTLS(t *testing.T, s *Server, pool *x509.CertPool) (*client, error) {
	t.Helper()
	hostport := strings.TrimPrefix(s.Addr(), "tls:")
	d := &net.Dialer{Timeout: testTimeout}
	conn, err := tls.DialWithDialer(d, "tcp", hostport, &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12})
	if err != nil {
		return nil, err
	}
	return newClient(t, conn), nil
}

func TestTLSFromEnvironmentFiles(t *testing.T) {
	_, pool, certFile, keyFile := selfSigned(t)
	cleanEnv(t)
	t.Setenv("LIVETRACE_TLS_CERT", certFile)
	t.Setenv("LIVETRACE_TLS_KEY", keyFile)
	book := &logBook{}
	s, err := ServeWithOptions("tls:0", Options{Logf: book.logf, QueueBytes: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer closeServer(t, s)
	if !strings.HasPrefix(s.Addr(), "tls:127.0.0.1:") {
		t.Fatalf("address %s", s.Addr())
	}
	c, err := dialTLS(t, s, pool)
	if err != nil {
		t.Fatal(err)
	}
	c.start(map[string]any{"duration_ns": 1, "client": "over tls"})
	if end := c.untilEnd().end; end.Reason != reasonDuration || !end.Complete {
		t.Fatalf("end %+v", end)
	}
	// A client that does not trust the certificate gets nothing.
	if _, err := dialTLS(t, s, x509.NewCertPool()); err == nil {
		t.Fatal("an untrusted certificate was accepted")
	}
	waitIdle(t, s)
	if len(book.matching(`session 1 started for "over tls" at 127.0.0.1:`)) != 1 {
		t.Fatalf("log:\n%s", book)
	}
}

func TestTLSFromOptions(t *testing.T) {
	cert, pool, _, _ := selfSigned(t)
	s, _ := serveTest(t, "tls:127.0.0.1:0", Options{TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}})
	c, err := dialTLS(t, s, pool)
	if err != nil {
		t.Fatal(err)
	}
	c.start(map[string]any{"duration_ns": 1})
	c.untilEnd()
}

func TestTLSWithoutACertificateIsAnError(t *testing.T) {
	cleanEnv(t)
	if _, err := Serve("tls:0"); err == nil || !strings.Contains(err.Error(), "LIVETRACE_TLS_CERT and LIVETRACE_TLS_KEY") {
		t.Fatalf("got %v", err)
	}
	if _, err := ServeWithOptions("tls:0", Options{TLSConfig: &tls.Config{}}); err == nil || !strings.Contains(err.Error(), "no certificate") {
		t.Fatalf("got %v", err)
	}
	t.Setenv("LIVETRACE_TLS_CERT", filepath.Join(t.TempDir(), "missing.pem"))
	t.Setenv("LIVETRACE_TLS_KEY", filepath.Join(t.TempDir(), "missing.key"))
	if _, err := Serve("tls:0"); err == nil || !strings.Contains(err.Error(), "cannot load LIVETRACE_TLS_CERT") {
		t.Fatalf("got %v", err)
	}
}

func TestBeyondLoopbackNeedsATokenAndIsWarnedAbout(t *testing.T) {
	cleanEnv(t)
	_, err := Serve("tcp:0.0.0.0:0")
	if err == nil || !strings.Contains(err.Error(), "without a token") || !strings.Contains(err.Error(), "LIVETRACE_TOKEN") {
		t.Fatalf("got %v", err)
	}
	s, book := serveTest(t, "tcp:0.0.0.0:0", Options{Token: "t"})
	if w := book.matching("beyond loopback"); len(w) != 1 || !strings.Contains(w[0], "unencrypted") {
		t.Fatalf("log:\n%s", book)
	}
	closeServer(t, s)

	cert, _, _, _ := selfSigned(t)
	s, book = serveTest(t, "tls:0.0.0.0:0", Options{Token: "t", TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}})
	if w := book.matching("beyond loopback"); len(w) != 1 || strings.Contains(w[0], "unencrypted") {
		t.Fatalf("log:\n%s", book)
	}
	closeServer(t, s)
	if _, err := ServeWithOptions("tls:0.0.0.0:0", Options{TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}}); err == nil {
		t.Fatal("TLS beyond loopback without a token")
	}
}
