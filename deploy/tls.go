package deploy

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// TLS file names in the secrets folder (GenerateTLS).
const (
	// CAFile is the certificate of the private CA that signed the NATS
	// servers' certificate: clients (SSL_CERT_FILE) and servers (routes)
	// trust it alone.
	CAFile = "nats-ca.pem"
	// ServerCertFile is the certificate every NATS server of the cluster
	// presents, to clients and to the other servers (routes).
	ServerCertFile = "nats-server.pem"
	// ServerKeyFile is its private key. SECRET.
	ServerKeyFile = "nats-server-key.pem"
)

// TLSHosts are the names the NATS servers' certificate holds by default:
// the services of deploy/stack.yml (nats1, nats2, nats3) and of
// docker-compose.yml (nats), and loopback for a server started by hand.
var TLSHosts = []string{"nats1", "nats2", "nats3", "nats", "localhost", "127.0.0.1", "::1"}

// TLSOptions configure GenerateTLS.
type TLSOptions struct {
	// Hosts are the DNS names and IP addresses the servers' certificate
	// is valid for, besides TLSHosts: the names clients and routes dial.
	Hosts []string
	// Force replaces existing files; without it GenerateTLS refuses to
	// touch a folder that has any.
	Force bool
	// Now is the start of the certificates' validity; zero means now.
	Now time.Time
}

// TLS validity: the CA for ten years, the servers' certificate for two
// (make compose-secrets FORCE=1 renews both, then redeploy).
const (
	caValidity     = 10 * 365 * 24 * time.Hour
	serverValidity = 2 * 365 * 24 * time.Hour
)

// GenerateTLS writes to dir (made 0700) a private CA (CAFile) and one
// certificate for every NATS server of a cluster (ServerCertFile, its key
// ServerKeyFile, 0600), signed by the CA, valid for TLSHosts and o.Hosts, for
// both server and client authentication: the servers verify each other's
// routes with it. ECDSA P-256 keys; the CA's key is not kept (nothing else
// is ever signed with it: new hosts mean a new CA, FORCE=1). It returns the
// names and addresses the certificate holds.
func GenerateTLS(dir string, o TLSOptions) ([]string, error) {
	if !o.Force {
		for _, f := range []string{CAFile, ServerCertFile, ServerKeyFile} {
			if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
				return nil, fmt.Errorf("%w in %s (replace them with force, then redeploy the NATS servers)", ErrExist, dir)
			}
		}
	}
	hosts, err := tlsHosts(o.Hosts)
	if err != nil {
		return nil, err
	}
	now := o.Now
	if now.IsZero() {
		now = time.Now()
	}
	now = now.Add(-time.Hour) // clocks of other hosts a little behind

	ca, caDER, caKey, err := newCA(now)
	if err != nil {
		return nil, err
	}
	srvDER, keyDER, err := newServerCert(now, hosts, ca, caKey)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, err
	}
	for name, block := range map[string]*pem.Block{
		CAFile:         {Type: "CERTIFICATE", Bytes: caDER},
		ServerCertFile: {Type: "CERTIFICATE", Bytes: srvDER},
		ServerKeyFile:  {Type: "PRIVATE KEY", Bytes: keyDER},
	} {
		if err := writeSecret(filepath.Join(dir, name), pem.EncodeToMemory(block)); err != nil {
			return nil, fmt.Errorf("TLS: %w", err)
		}
	}
	return hosts, nil
}

// tlsHosts is TLSHosts and then extra, each a DNS name or an IP address,
// without repeats.
func tlsHosts(extra []string) ([]string, error) {
	hosts := slices.Clone(TLSHosts)
	for _, h := range extra {
		if h == "" || len(h) > 253 {
			return nil, fmt.Errorf("TLS host %q: want a DNS name or an IP address", h)
		}
		if !slices.Contains(hosts, h) {
			hosts = append(hosts, h)
		}
	}
	return hosts, nil
}

// newCA makes the CA, valid from now for caValidity: its certificate,
// parsed and as DER, and its key.
func newCA(now time.Time) (*x509.Certificate, []byte, *ecdsa.PrivateKey, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, err
	}
	ca := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{Organization: []string{"pipedbn"}, CommonName: "pipedbn NATS CA"},
		NotBefore:             now,
		NotAfter:              now.Add(caValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("TLS: CA certificate: %w", err)
	}
	if ca, err = x509.ParseCertificate(caDER); err != nil {
		return nil, nil, nil, err
	}
	return ca, caDER, caKey, nil
}

// newServerCert makes the servers' certificate for hosts, valid from now
// for serverValidity, for server and client authentication, signed by ca:
// the certificate and its key as DER (PKCS #8).
func newServerCert(now time.Time, hosts []string, ca *x509.Certificate, caKey *ecdsa.PrivateKey) (srvDER, keyDER []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	srv := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{Organization: []string{"pipedbn"}, CommonName: "pipedbn NATS server"},
		NotBefore:    now,
		NotAfter:     now.Add(serverValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			srv.IPAddresses = append(srv.IPAddresses, ip)
		} else {
			srv.DNSNames = append(srv.DNSNames, h)
		}
	}
	if srvDER, err = x509.CreateCertificate(rand.Reader, srv, ca, &key.PublicKey, caKey); err != nil {
		return nil, nil, fmt.Errorf("TLS: server certificate: %w", err)
	}
	if keyDER, err = x509.MarshalPKCS8PrivateKey(key); err != nil {
		return nil, nil, err
	}
	return srvDER, keyDER, nil
}

// serial is a random certificate serial number of 127 bits.
func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(errors.Join(errors.New("deploy: no randomness"), err))
	}
	return n
}
