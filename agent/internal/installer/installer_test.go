package installer

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"aead.dev/minisign"

	"github.com/yuzugo/yuzu/agent/supervisor"
	"github.com/yuzugo/yuzu/agent/trust"
	"github.com/yuzugo/yuzu/sdk/host"
)

// selfBytes is this test binary: a real executable for this system, standing in for
// a plugin build (the trial is a fake).
func selfBytes(t *testing.T) []byte {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// trials counts the builds started, and answers as plugin x of version v.
type trials struct {
	n int
	v string
}

func (tr *trials) trial(_ context.Context, b supervisor.Binary) (host.Manifest, error) {
	tr.n++
	return host.Manifest{Name: b.Name, Version: tr.v, Protocol: 1}, nil
}

// Nothing of a build runs before its system and its signature are checked, and what
// the catalog already says of the bytes (installed, rolled back) needs no start.
func TestNothingRunsBeforeItIsChecked(t *testing.T) {
	bin := selfBytes(t)
	pub, priv, err := minisign.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	_, otherPriv, _ := minisign.GenerateKey(rand.Reader)
	sign := func(k minisign.PrivateKey, b []byte) []byte {
		r := minisign.NewReader(bytes.NewReader(b))
		_, _ = io.Copy(io.Discard, r)
		return r.Sign(k)
	}
	pubDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(pubDir, "acme.pub"), []byte(pub.String()+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	keys, err := trust.LoadKeys(pubDir, "")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "plugins")
	tr := &trials{v: "1.0.0"}
	cfg := Config{PluginDir: dir, StateDir: t.TempDir(), Keys: keys, Trial: tr.trial}
	ctx := context.Background()
	tampered := append(bytes.Clone(bin), 0)
	for _, c := range []struct {
		name string
		o    Offer
		want string
	}{
		{"unsigned", Offer{Bytes: bin, FileName: "yuzu-plugin-x"}, "unsigned, and this agent trusts only signed plugins"},
		{"unknown key", Offer{Bytes: bin, Signature: sign(otherPriv, bin), FileName: "yuzu-plugin-x"}, "which no configured publisher has"},
		{"tampered", Offer{Bytes: tampered, Signature: sign(priv, bin), FileName: "yuzu-plugin-x"}, "does not match these bytes"},
		{"not an executable", Offer{Bytes: []byte("#!/bin/sh\n"), FileName: "yuzu-plugin-x"}, "not an executable this agent knows"},
		{"claim", Offer{Bytes: bin, Signature: sign(priv, bin), FileName: "yuzu-plugin-x", Claim: Claim{SHA256: strings.Repeat("0", 64)}}, "the offer says"},
		{"misnamed", Offer{Bytes: bin, FileName: "x"}, "a plugin binary's name is yuzu-plugin-NAME"},
	} {
		_, err := Install(ctx, cfg, c.o)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	if tr.n != 0 {
		t.Fatalf("%d trial starts of builds that were refused on their bytes", tr.n)
	}
	good := Offer{Bytes: bin, Signature: sign(priv, bin), FileName: "yuzu-plugin-x"}
	res, err := Install(ctx, cfg, good)
	if err != nil || res.Change.Kind != trust.KindNew || tr.n != 1 || res.Change.Entry.Publisher != "acme" {
		t.Fatalf("a good build: %+v %v (%d trials)", res, err, tr.n)
	}
	if res, err := Install(ctx, cfg, good); err != nil || res.Change.Kind != trust.KindSame || tr.n != 1 {
		t.Errorf("the same build again: %+v %v, %d trials", res, err, tr.n)
	}
	// A build rolled back is refused on its checksum, without a start.
	cat, _ := trust.Load(dir)
	e := cat.Entry("x")
	cat.Plugins["x"] = &trust.Entry{File: e.File, SHA256: strings.Repeat("ab", 32), Version: "0.9.0",
		Rejected: []trust.Rejection{{Version: "1.0.0", SHA256: e.SHA256, Reason: "crashed"}}}
	if err := cat.Save(dir); err != nil {
		t.Fatal(err)
	}
	var re *trust.RefusedError
	if _, err := Install(ctx, cfg, good); !errors.As(err, &re) || !strings.Contains(err.Error(), "was rolled back") || tr.n != 1 {
		t.Errorf("a rolled-back build: %v, %d trials", err, tr.n)
	}
}
