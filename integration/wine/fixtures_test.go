//go:build linux

package wine

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/tc-hib/winres"
	"github.com/tc-hib/winres/version"
)

// The version resource written into versioned.exe.
const (
	fixtureFileVersion    = "1.2.3.4"
	fixtureProductVersion = "5.6.7.8"
	fixtureCompany        = "Yuzu Winetest Corp"
	fixtureDescription    = "yuzu get_version_info fixture"
	fixtureProduct        = "yuzu wine leg"
)

// signSkip is why the signed fixtures could not be made, or "".
var signSkip string

// makeFixtures writes the executables the filesystem tests read: unsigned.exe (a Go
// exe as built), versioned.exe (the same with a version resource written by
// tc-hib/winres), signed.exe (unsigned.exe signed with a code-signing certificate made
// here, for this run only) and tampered.exe (signed.exe with one byte of its code
// changed after signing).
func makeFixtures() error {
	if err := os.MkdirAll(env.fixture, 0o755); err != nil {
		return err
	}
	src := filepath.Join(env.bin, crasherExe)
	exe, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	unsigned := filepath.Join(env.fixture, "unsigned.exe")
	if err := os.WriteFile(unsigned, exe, 0o644); err != nil {
		return err
	}

	vi := version.Info{}
	vi.SetFileVersion(fixtureFileVersion)
	vi.SetProductVersion(fixtureProductVersion)
	for k, v := range map[string]string{
		version.CompanyName:     fixtureCompany,
		version.FileDescription: fixtureDescription,
		version.ProductName:     fixtureProduct,
	} {
		if err := vi.Set(version.LangDefault, k, v); err != nil {
			return err
		}
	}
	rs := winres.ResourceSet{}
	rs.SetVersionInfo(vi)
	var out bytes.Buffer
	if err := rs.WriteToEXE(&out, bytes.NewReader(exe)); err != nil {
		return fmt.Errorf("winres: %w", err)
	}
	if err := os.WriteFile(filepath.Join(env.fixture, "versioned.exe"), out.Bytes(), 0o644); err != nil {
		return err
	}

	signSkip = sign(unsigned)
	return nil
}

// sign makes signed.exe and tampered.exe from unsigned, with a throwaway self-signed
// code-signing certificate (RSA, SHA-256), and returns why it could not, or "".
func sign(unsigned string) string {
	for _, tool := range []string{"openssl", "osslsigncode"} {
		if _, err := exec.LookPath(tool); err != nil {
			return tool + " is not installed (scripts/deps.sh windows installs it): " + err.Error()
		}
	}
	dir := env.fixture
	key, cert := filepath.Join(dir, "sign.key"), filepath.Join(dir, "sign.crt")
	signed := filepath.Join(dir, "signed.exe")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, argv := range [][]string{
		{"openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-sha256", "-days", "2",
			"-subj", "/CN=yuzu wine leg test signer", "-addext", "extendedKeyUsage=codeSigning",
			"-keyout", key, "-out", cert},
		{"osslsigncode", "sign", "-certs", cert, "-key", key, "-h", "sha256", "-n", "yuzu fixture",
			"-in", unsigned, "-out", signed},
	} {
		if out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput(); err != nil {
			return fmt.Sprintf("%s failed: %v: %s", strings.Join(argv[:2], " "), err, lastLines(string(out), 3))
		}
	}
	data, err := os.ReadFile(signed)
	if err != nil {
		return err.Error()
	}
	// One byte of the code section changes; the signature stays as it was.
	data[0x1000] ^= 0xff
	if err := os.WriteFile(filepath.Join(dir, "tampered.exe"), data, 0o644); err != nil {
		return err.Error()
	}
	return ""
}
