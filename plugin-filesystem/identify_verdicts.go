package main

import (
	"bytes"
	"fmt"
	"path/filepath"

	"github.com/yuzugo/yuzu/sdk/subprocess"
)

// The verdicts of get_signature and get_version_info, as pure functions of what the
// system tools and calls answered, so every system's rules are tested everywhere.

// codesignUnsigned is what codesign prints for a file that carries no signature.
const codesignUnsigned = "code object is not signed at all"

// codesignStatus classifies a run of `codesign --verify --deep --strict <path>`
// (stderr merged into the output): valid when it exits 0, unsigned when it says the
// code is not signed, invalid for any other failure it explains, and unknown when it
// did not run, was killed, timed out, wrote more than the output cap, or failed
// without a word. valid means the signature's seal is intact, not that the code is
// trusted or notarized.
func codesignStatus(res subprocess.Result, err error) string {
	switch {
	case err != nil || !res.Complete():
		return "unknown"
	case res.ExitCode == 0:
		return "valid"
	case bytes.Contains(res.Output, []byte(codesignUnsigned)):
		return "unsigned"
	case len(res.Output) > 0:
		return "invalid"
	}
	return "unknown"
}

// plutilValue returns the value printed by `plutil -extract <key> raw -o - <plist>`
// and whether there is one: the tool ran, exited 0 within its deadline and output
// cap, and printed something besides white space.
func plutilValue(res subprocess.Result, err error) (string, bool) {
	if err != nil || !res.Complete() || res.ExitCode != 0 {
		return "", false
	}
	v := bytes.TrimSpace(res.Output)
	if len(v) == 0 {
		return "", false
	}
	return string(v), true
}

// plistFor names the property list get_version_info reads on macOS for the
// canonical path p: Contents/Info.plist of an .app bundle directory, or p itself
// when it is called Info.plist. Anything else has no bundle version (false).
func plistFor(p string, isDir bool) (string, bool) {
	switch {
	case isDir && filepath.Ext(p) == ".app":
		return filepath.Join(p, "Contents", "Info.plist"), true
	case filepath.Base(p) == "Info.plist":
		return p, true
	}
	return "", false
}

// WinVerifyTrust results get_signature names (WinError.h).
const (
	trustNoSignature       = 0x800B0100 // TRUST_E_NOSIGNATURE
	trustExplicitDistrust  = 0x800B0111 // TRUST_E_EXPLICIT_DISTRUST
	trustSubjectNotTrusted = 0x800B0004 // TRUST_E_SUBJECT_NOT_TRUSTED
	cryptSecuritySettings  = 0x80092026 // CRYPT_E_SECURITY_SETTINGS
)

// winTrustStatus names a WinVerifyTrust result: valid, unsigned, distrusted,
// untrusted, security_settings_blocked, or error_0x<8 hex digits> for anything
// else.
func winTrustStatus(code uint32) string {
	switch code {
	case 0:
		return "valid"
	case trustNoSignature:
		return "unsigned"
	case trustExplicitDistrust:
		return "distrusted"
	case trustSubjectNotTrusted:
		return "untrusted"
	case cryptSecuritySettings:
		return "security_settings_blocked"
	}
	return fmt.Sprintf("error_0x%08x", code)
}
