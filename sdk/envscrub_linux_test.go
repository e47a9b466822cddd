package sdk

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// envScrubChild is set in the child TestScrubEnvBlock starts.
const envScrubChild = "YUZU_SDK_TEST_ENVSCRUB"

// TestScrubEnvBlock: a child with a secret in its environment clears it; its own
// /proc/self/environ then shows the name with zero bytes for the value, the other
// variables whole, and the secret nowhere.
func TestScrubEnvBlock(t *testing.T) {
	if os.Getenv(envScrubChild) == "1" {
		if err := scrubEnvBlock("YUZU_TEST_SECRET"); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile("/proc/self/environ")
		if err != nil {
			t.Fatal(err)
		}
		os.Stdout.Write(b)
		return
	}
	secret := "-----BEGIN EC PRIVATE KEY-----\nc2VjcmV0\n-----END EC PRIVATE KEY-----\n"
	cmd := exec.Command(os.Args[0], "-test.run=^TestScrubEnvBlock$")
	cmd.Env = []string{envScrubChild + "=1", "BEFORE=x", "YUZU_TEST_SECRET=" + secret, "AFTER=y"}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	env, _, _ := strings.Cut(string(out), "PASS")
	if strings.Contains(env, "PRIVATE KEY") || strings.Contains(env, "c2VjcmV0") {
		t.Errorf("the secret is still in /proc/self/environ: %q", env)
	}
	want := "YUZU_TEST_SECRET=" + string(bytes.Repeat([]byte{0}, len(secret))) + "\x00"
	if !strings.Contains(env, "BEFORE=x\x00") || !strings.Contains(env, "AFTER=y\x00") || !strings.Contains(env, want) {
		t.Errorf("environ after the scrub: %q", env)
	}
	if err := scrubEnvBlock("YUZU_NO_SUCH_VARIABLE"); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("a variable that is not there: %v", err)
	}
}
