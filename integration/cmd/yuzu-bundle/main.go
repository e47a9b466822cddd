// Command yuzu-bundle makes the signed bundles the agent updates itself from
// (docs/fleet.md "Updating the agent"), and release keys to sign them with:
//
//	yuzu-bundle keygen DIR
//	yuzu-bundle make -key FILE [-password-file FILE] -version V -os OS -arch ARCH -o OUT AGENT-BINARY
//
// keygen writes DIR/release.key (a minisign secret key, not encrypted: keep it
// offline, or use minisign -G for an encrypted one) and DIR/release.pub, a publisher
// file for the agents' publishers dir that may sign agent releases and no plugin
// (`agent: yes`, `plugins:`). make writes the bundle: the index, bundle.json (version, system,
// architecture, the binary's size and SHA-256), its minisign signature, and the
// binary.
package main

import (
	"bytes"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"aead.dev/minisign"

	"github.com/yuzugo/yuzu/agent/update"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "yuzu-bundle:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return errors.New("usage: yuzu-bundle keygen DIR | make -key FILE -version V -os OS -arch ARCH -o OUT AGENT-BINARY")
	}
	switch args[0] {
	case "keygen":
		if len(args) != 2 {
			return errors.New("keygen takes one directory")
		}
		return keygen(args[1])
	case "make":
		return makeBundle(args[1:])
	}
	return fmt.Errorf("unknown command %q", args[0])
}

func keygen(dir string) error {
	pub, priv, err := minisign.GenerateKey(rand.Reader)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	secret, err := priv.MarshalText()
	if err != nil {
		return err
	}
	public, err := pub.MarshalText()
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "release.key"), append(secret, '\n'), 0o600); err != nil {
		return err
	}
	text := "# a publisher of agent releases only\n" + string(public) + "\nagent: yes\nplugins:\n"
	return os.WriteFile(filepath.Join(dir, "release.pub"), []byte(text), 0o644)
}

func makeBundle(args []string) error {
	fs := flag.NewFlagSet("make", flag.ContinueOnError)
	keyFile := fs.String("key", "", "minisign secret key")
	passFile := fs.String("password-file", "", "the key's password, when it is encrypted")
	version := fs.String("version", "", "the release's semantic version")
	goos := fs.String("os", "", "linux, windows or darwin")
	goarch := fs.String("arch", "", "amd64 or arm64")
	out := fs.String("o", "", "the bundle to write")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 || *keyFile == "" || *version == "" || *goos == "" || *goarch == "" || *out == "" {
		return errors.New("make needs -key, -version, -os, -arch, -o and the agent binary")
	}
	keyText, err := os.ReadFile(*keyFile)
	if err != nil {
		return err
	}
	var priv minisign.PrivateKey
	if minisign.IsEncrypted(keyText) {
		if *passFile == "" {
			return errors.New("the key is encrypted: give -password-file")
		}
		pass, err := os.ReadFile(*passFile)
		if err != nil {
			return err
		}
		if priv, err = minisign.DecryptKey(strings.TrimRight(string(pass), "\r\n"), keyText); err != nil {
			return err
		}
	} else if err := priv.UnmarshalText(bytes.TrimSpace(keyText)); err != nil {
		return err
	}
	binary, err := os.ReadFile(fs.Arg(0))
	if err != nil {
		return err
	}
	name := update.AgentFile(*goos)
	files := map[string][]byte{name: binary}
	raw := update.MarshalIndex(update.NewIndex(*version, *goos, *goarch, files, name))
	var buf bytes.Buffer
	if err := update.WriteBundle(&buf, raw, minisign.Sign(priv, raw), files); err != nil {
		return err
	}
	return os.WriteFile(*out, buf.Bytes(), 0o644)
}
