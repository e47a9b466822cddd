package main

import (
	"bytes"
	"fmt"
	"path/filepath"

	"github.com/yuzugo/yuzu/sdk/subprocess"
)

// The verdicts of get_signature and get_version_info, as pure functions of what the
// system tools and calls answered, so every system's rules are tested everywhere.

// Messages of `codesign --verify` that decide a verdict (docs/filesystem.md lists every
// message and exit status with its verdict).
const (
	// codesignUnsigned: the code carries no signature. Under --deep it is also what
	// codesign says about a nested piece of code, followed by codesignSubcomponent.
	codesignUnsigned = "code object is not signed at all"
	// codesignSubcomponent names the nested code a failure is about: the bundle is
	// signed but its signature does not cover that piece, so the bundle is invalid,
	// not unsigned.
	codesignSubcomponent = "In subcomponent:"
	// codesignNoFile: the path vanished or could not be read between the check and
	// the run; nothing was verified.
	codesignNoFile = "No such file or directory"
)

// codesign's exit statuses (codesign(1)): 0 the code verified, 1 verification failed
// (including unsigned code), 2 the command line was refused, 3 the code failed a
// requirement given on the command line.
const (
	codesignExitFailed      = 1
	codesignExitUsage       = 2
	codesignExitRequirement = 3
)

// codesignStatus classifies a run of `codesign --verify --deep --strict <path>`
// (stderr merged into the output):
//
//   - valid when it exits 0: the seal is intact, nested code included (not a
//     statement of trust or notarization);
//   - unsigned when it exits 1 saying the code is not signed at all and names no
//     subcomponent;
//   - invalid when it exits 1 with any other explanation, including a signed bundle
//     whose nested code is unsigned or broken ("In subcomponent: ..."), or exits 3;
//   - unknown when it did not run, was killed, timed out, wrote more than the output
//     cap, failed without a word, refused its command line (exit 2), could not find
//     the file, or exited with a status codesign does not document.
func codesignStatus(res subprocess.Result, err error) string {
	switch {
	case err != nil || !res.Complete():
		return "unknown"
	case res.ExitCode == 0:
		return "valid"
	case len(bytes.TrimSpace(res.Output)) == 0:
		return "unknown"
	}
	switch res.ExitCode {
	case codesignExitFailed:
		switch {
		case bytes.Contains(res.Output, []byte(codesignSubcomponent)):
			return "invalid"
		case bytes.Contains(res.Output, []byte(codesignUnsigned)):
			return "unsigned"
		case bytes.Contains(res.Output, []byte(codesignNoFile)):
			return "unknown"
		}
		return "invalid"
	case codesignExitRequirement:
		return "invalid"
	case codesignExitUsage:
		return "unknown"
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
