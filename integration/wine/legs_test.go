//go:build linux

package wine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWindowsVersionInfo reads a version resource written for this run by
// tc-hib/winres through GetFileVersionInfoW, VerQueryValue and the plugin's own
// decoder: the fixed numbers and the strings come back exactly (fleet commands to one
// running agent, as in the tests below).
func TestWindowsVersionInfo(t *testing.T) {
	needWine(t)
	t.Parallel()
	f := newWorld(t, fsExe).startFleet(t, true)
	f.expect("file_version|"+fixtureFileVersion+"\nproduct_version|"+fixtureProductVersion+
		"\ncompany_name|"+fixtureCompany+"\nfile_description|"+fixtureDescription+
		"\nproduct_name|"+fixtureProduct+"\n"+undeclared, 0,
		"filesystem", "get_version_info", "path="+winPath(filepath.Join(env.fixture, "versioned.exe")))
	f.expect("error|no version info found in file\n"+undeclared+rc1, 1,
		"filesystem", "get_version_info", "path="+winPath(filepath.Join(env.fixture, "unsigned.exe")))
}

// TestWindowsSignature checks WinVerifyTrust's three outcomes Wine 8.0 tells apart as
// Windows does: no signature, a signed file changed after signing (TRUST_E_BAD_DIGEST)
// and an intact signature. Wine does not check the chain of a SHA-256 signature, so
// the self-signed certificate made here reads valid; on Windows it would be untrusted
// (CERT_E_UNTRUSTEDROOT). That difference is logged, not asserted away.
func TestWindowsSignature(t *testing.T) {
	needWine(t)
	t.Parallel()
	f := newWorld(t, fsExe).startFleet(t, true)
	f.expect("signature_status|unsigned\n"+undeclared, 0,
		"filesystem", "get_signature", "path="+winPath(filepath.Join(env.fixture, "unsigned.exe")))
	if signSkip != "" {
		t.Skip("signed fixtures not made: " + signSkip)
	}
	f.expect("signature_status|error_0x80096010\n"+undeclared, 0,
		"filesystem", "get_signature", "path="+winPath(filepath.Join(env.fixture, "tampered.exe")))
	f.expect("signature_status|valid\n"+undeclared, 0,
		"filesystem", "get_signature", "path="+winPath(filepath.Join(env.fixture, "signed.exe")))
	t.Log("Wine difference (SHA-256 chain trust): Wine 8.0 skips the chain policy for SHA-256 signatures, " +
		"so the self-signed signer reads valid; Windows answers untrusted (CERT_E_UNTRUSTEDROOT) for it. " +
		"What this proves: the signature is found, its digest checked, and the verdict mapped.")
}

// TestWindowsACL reads real DACLs through GetNamedSecurityInfo, the SDDL conversion,
// GetAce and LookupAccountSid. Wine builds a file's DACL from its Unix mode bits, so
// the cases are staged with chmod.
func TestWindowsACL(t *testing.T) {
	needWine(t)
	t.Parallel()
	f := newWorld(t, fsExe).startFleet(t, true)
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	const (
		system   = "ace|allow|NT AUTHORITY\\SYSTEM|0x001f01ff|-\n"
		owner    = "ace|allow|VM\\root|0x001f01ff|-\n"
		wineUser = "S-1-5-21-0-0-0-1000"
	)
	for _, c := range []struct {
		mode os.FileMode
		sddl string
		aces string
	}{
		{0o600, "D:(A;;FA;;;SY)(A;;FA;;;" + wineUser + ")", system + owner},
		{0o644, "D:(A;;FA;;;SY)(A;;FA;;;" + wineUser + ")(A;;0x1200a9;;;WD)", system + owner + "ace|allow|\\Everyone|0x001200a9|-\n"},
		// World-writable: Everyone may write and delete, the finding a fleet looks for.
		{0o666, "D:(A;;FA;;;SY)(A;;FA;;;" + wineUser + ")(A;;0x1301ff;;;WD)", system + owner + "ace|allow|\\Everyone|0x001301ff|-\n"},
	} {
		p := filepath.Join(dir, "f"+c.mode.String()[1:]+".txt")
		writeFile(t, p, "x")
		if err := os.Chmod(p, c.mode); err != nil {
			t.Fatal(err)
		}
		r := f.exec("filesystem", "get_acl", "path="+winPath(p))
		want := fleetForm("sddl|O:" + wineUser + c.sddl + "\ncontrol|-\n" + c.aces + undeclared)
		if r.code != 0 || r.stdout != want {
			t.Errorf("get_acl of a %v file:\n got %q\nwant %q\n%s", c.mode, r.stdout, want, r.stderr)
		}
	}
	f.expect("error|path is not accessible or outside allowed base directory\n"+undeclared+rc1, 1,
		"filesystem", "get_acl", "path="+winPath(filepath.Join(dir, "missing.txt")))
	t.Log("Wine difference (deny ACEs): Wine maps a DACL to and from Unix mode bits, so deny ACEs, " +
		"group ACEs and inheritance cannot be staged; their rows are tested from captured DACL bytes (internal/acl)")
}

// TestWindowsRemoteDriveGuard: find_by_hash refuses a drive that GetDriveType calls
// DRIVE_REMOTE before touching it. N: is staged as a network drive by the set-up
// (scripts/wine-setup.sh); the same files through Z: are searched.
func TestWindowsRemoteDriveGuard(t *testing.T) {
	needWine(t)
	t.Parallel()
	w := newWorld(t, fsExe)
	share := filepath.Join(env.wineDir, "netshare")
	writeFile(t, filepath.Join(share, "guard.txt"), "on the network drive\n")
	sum, err := fileSHA256(filepath.Join(share, "guard.txt"))
	if err != nil {
		t.Fatal(err)
	}
	refused := "truncated|none|visited=0|hashed=0|skipped_unreadable=0|skipped_symlink=0|skipped_not_regular=0|skipped_oversize=0|skipped_network_mount=1\n" +
		"matches_found|0\n[result_status] CONSTRAINED / PARTIAL / filesystem:skipped_network_mount\n"
	w.expect(refused, 0, "filesystem", "find_by_hash", `directory=N:\`, "sha256="+sum)
	w.expect(refused, 0, "filesystem", "find_by_hash", `directory=n:\`, "sha256="+strings.ToUpper(sum))
	// The same directory by its local name is walked and the file found.
	w.expect("match|"+winPath(share)+`\guard.txt|21`+"\nmatches_found|1\n"+undeclared, 0,
		"filesystem", "find_by_hash", "directory="+winPath(share), "sha256="+sum)
	// A UNC root is refused by its spelling alone.
	w.expect(refused, 0, "filesystem", "find_by_hash", `directory=\\server\share`, "sha256="+sum)
	t.Log("Wine difference (UNC remote detection): Wine reports a UNC root as DRIVE_NO_ROOT_DIR or DRIVE_FIXED, never " +
		"DRIVE_REMOTE, and WNetGetConnection always fails, so only the drive-letter guard and the UNC spelling rule run here")
}

// TestWindowsFirewallUnderWine: Wine's firewall COM objects activate, but every
// profile switch and the rule enumeration answer E_NOTIMPL (and the count is a stub
// 0). The plugin must answer unknown with the HRESULT named, never off or an empty
// ruleset. Real firewall states and rules cannot be shown under Wine; their rows are
// tested from recorded HRESULTs (plugin-firewall/internal/windows).
func TestWindowsFirewallUnderWine(t *testing.T) {
	needWine(t)
	t.Parallel()
	w := newWorld(t, firewallExe)
	// describe's mechanism line: Windows' state rows name profiles, not a backend, so
	// it is the Windows leg's declared mechanism, marked as declared.
	if d := w.agent("describe", "firewall"); d.code != 0 || !strings.Contains(d.stdout, "\nmechanism: inetfwpolicy2_com (declared; the answer names no backend)\nactions:\n") {
		t.Errorf("describe firewall:\n%s", d)
	}
	f := w.startFleet(t, true)
	var want strings.Builder
	for _, p := range []string{"Domain", "Private", "Public"} {
		want.WriteString("profile|" + p + "|unknown\nerror|firewall_enabled:" + p + ":0x80004001\n")
	}
	want.WriteString("ruleset|unknown\n" + undeclared)
	f.expect(want.String(), 0, "firewall", "state")
	f.expect("error|enum_create:0x80004001\n"+undeclared, 0, "firewall", "rules")
	t.Log("Wine difference (firewall): INetFwPolicy2 is stubbed in Wine 8.0 (E_NOTIMPL), so this proves COM activation, " +
		"the vtable calls and the honest answer to a failing policy, not real firewall data")
}
