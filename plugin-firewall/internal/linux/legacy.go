package linux

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/yuzugo/yuzu/plugin-firewall/internal/parse"
	"github.com/yuzugo/yuzu/sdk/rows"
	"github.com/yuzugo/yuzu/sdk/safefile"
	"github.com/yuzugo/yuzu/sdk/subprocess"
)

// The legacy tables are the kernel's x_tables, which iptables-legacy writes and which
// nftables cannot see. The kernel lists each family's tables in a file under
// /proc/<task>/net, so whether any exist is known without running a tool, and without
// creating one: iptables-legacy creates the filter table on its first use, even for a
// listing, while iptables-save reads that file and dumps only the tables it names.
const (
	familyIPv4 = 2  // NFPROTO_IPV4, named ip
	familyIPv6 = 10 // NFPROTO_IPV6, named ip6
)

// legacyMaxNames bounds the read of a table-name list (a handful of short names).
const legacyMaxNames = 64 << 10

// legacyMaxDump caps the output of one save tool. A legacy host with tens of thousands
// of rules (a large container host) prints some megabytes; a dump over the cap is
// reported as truncated, never read in part.
const legacyMaxDump = 16 << 20

// legacySource is where one family's legacy tables are read from.
type legacySource struct {
	family uint32
	// names is the file in the net directory that lists the family's tables.
	names string
	// tools are the save tools to try, in order: the legacy-only name first, then
	// the plain name, which on older systems is the legacy tool itself.
	tools []string
}

// DefaultLegacySources are the two families iptables-legacy keeps tables for.
var DefaultLegacySources = []legacySource{
	{familyIPv4, "ip_tables_names", []string{"/usr/sbin/iptables-legacy-save", "/usr/sbin/iptables-save"}},
	{familyIPv6, "ip6_tables_names", []string{"/usr/sbin/ip6tables-legacy-save", "/usr/sbin/ip6tables-save"}},
}

// LegacyFamily is what was learned about one family's legacy tables.
type LegacyFamily struct {
	Family uint32
	// Read is true when the kernel's list was read and every table on it was dumped
	// whole (trivially so when the list is empty).
	Read bool
	// Listed are the tables the kernel lists; Tables the dumped ones, in dump order.
	Listed []string
	Tables []parse.IptTable
}

// LegacyResult is what the legacy reader learned about both families.
type LegacyResult struct {
	// Diag holds an error row per family that could not be read whole, written
	// whatever else answers.
	Diag     []rows.Row
	Families []LegacyFamily
}

// Complete reports whether every family was read whole.
func (r LegacyResult) Complete() bool {
	for _, f := range r.Families {
		if !f.Read {
			return false
		}
	}
	return true
}

// HasTables reports whether the kernel lists any legacy table, read or not.
func (r LegacyResult) HasTables() bool {
	for _, f := range r.Families {
		if len(f.Listed) > 0 {
			return true
		}
	}
	return false
}

// HasContent reports whether a table that was read does anything.
func (r LegacyResult) HasContent() bool {
	for _, f := range r.Families {
		for _, t := range f.Tables {
			if parse.IptablesHasContent(t.Entries) {
				return true
			}
		}
	}
	return false
}

// RuleCount is the number of rules in the tables that were read.
func (r LegacyResult) RuleCount() int {
	n := 0
	for _, f := range r.Families {
		for _, t := range f.Tables {
			n += parse.IptablesRuleCount(t.Entries)
		}
	}
	return n
}

// rows renders every entry of the families that were read whole.
func (r LegacyResult) rows() []rows.Row {
	var out []rows.Row
	for _, f := range r.Families {
		if !f.Read {
			continue
		}
		for _, t := range f.Tables {
			for _, e := range t.Entries {
				out = append(out, parse.IptRow(f.Family, t.Name, e))
			}
		}
	}
	return out
}

// legacyReader reads the legacy tables of the network namespace it runs in.
type legacyReader struct {
	sources []legacySource
	// netDir returns the /proc directory of the calling thread's network namespace.
	netDir func() (string, error)
	run    Runner
	// timeout bounds the save tools of both families together.
	timeout time.Duration
}

func newLegacyReader(run Runner, timeout time.Duration) *legacyReader {
	return &legacyReader{sources: DefaultLegacySources, netDir: procNetDir, run: run, timeout: timeout}
}

// procNetDir is the net directory of the calling thread: /proc/thread-self/net, which
// follows the thread's own namespace (a thread moved into another namespace reads
// that one), or /proc/self/net on kernels older than 3.17 that lack thread-self.
func procNetDir() (string, error) {
	for _, d := range []string{"/proc/thread-self/net", "/proc/self/net"} {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			return d, nil
		}
	}
	return "", errors.New("no /proc net directory")
}

// Read reads both families one after the other, within one shared bound: a tool that
// hangs for the whole bound leaves the other family unread and says so, and the rung
// never costs more than one tool's deadline.
func (r *legacyReader) Read(ctx context.Context) LegacyResult {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	var res LegacyResult
	dir, dirErr := r.netDir()
	for _, src := range r.sources {
		fam, reason := r.readFamily(ctx, dir, dirErr, src)
		if reason != "" {
			res.Diag = append(res.Diag, legacyDiagRow(src.family, reason))
		}
		res.Families = append(res.Families, fam)
	}
	return res
}

// legacyDiagRow is the row naming a family that could not be read whole:
// error|iptables:<family>:<reason>.
func legacyDiagRow(family uint32, reason string) rows.Row {
	return rows.New("error", "iptables:"+parse.FamilyName(family)+":"+reason)
}

// Reasons a legacy family could not be read, as they appear in its error row (beside
// the nftables tokens timeout, eperm, io_error and oversized, which mean the same).
const (
	reasonNoTool       = "no_tool"
	reasonTruncated    = "truncated"
	reasonUnrecognised = "unrecognised"
	reasonExitPrefix   = "exit:"
	reasonMissing      = "missing:"
)

// readFamily reads one family: the kernel's list of its tables, then, if it names
// any, a dump of them. reason is empty when the family was read whole.
func (r *legacyReader) readFamily(ctx context.Context, dir string, dirErr error, src legacySource) (LegacyFamily, string) {
	fam := LegacyFamily{Family: src.family}
	if dirErr != nil {
		return fam, parse.ReasonIOError
	}
	b, err := safefile.ReadFile(filepath.Join(dir, src.names), legacyMaxNames)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// The family's table module is not loaded, so it has no table at all.
		fam.Read = true
		return fam, ""
	case errors.Is(err, fs.ErrPermission):
		return fam, parse.ReasonEPERM
	case errors.Is(err, safefile.ErrTooLarge):
		return fam, parse.ReasonOversized
	case err != nil:
		return fam, parse.ReasonIOError
	}
	fam.Listed = parse.ParseTableNames(b)
	if len(fam.Listed) == 0 {
		fam.Read = true
		return fam, ""
	}
	dump, reason := r.dump(ctx, src.tools)
	if reason != "" {
		return fam, reason
	}
	// Every table the kernel listed must be in the dump; one that is not was never
	// read (a tool that cannot see the legacy tables prints none of them).
	have := map[string]bool{}
	for _, t := range dump.Tables {
		have[t.Name] = true
	}
	for _, name := range fam.Listed {
		if !have[name] {
			return fam, reasonMissing + rows.Sanitize(name)
		}
	}
	fam.Tables, fam.Read = dump.Tables, true
	return fam, ""
}

// dump runs the first save tool that exists and is not the nf_tables variant (which
// lists nftables tables, already read over netlink, instead of the legacy ones).
func (r *legacyReader) dump(ctx context.Context, tools []string) (parse.IptDump, string) {
	for _, tool := range tools {
		res, err := r.run(ctx, subprocess.Spec{Argv: []string{tool}, Timeout: r.timeout, MaxOutput: legacyMaxDump})
		if err != nil || !res.ToolRan {
			if ctx.Err() != nil {
				return parse.IptDump{}, parse.ReasonTimeout
			}
			continue
		}
		// A tool that ended by itself within the bound is judged on its output, even
		// if the bound passes a moment later.
		switch {
		case res.OutputTruncated:
			return parse.IptDump{}, reasonTruncated
		case res.TimedOut, res.Reason == subprocess.ReasonCancelled:
			return parse.IptDump{}, parse.ReasonTimeout
		case res.Reason != subprocess.ReasonExited:
			return parse.IptDump{}, parse.ReasonIOError
		case res.ExitCode != 0:
			return parse.IptDump{}, reasonExitPrefix + strconv.Itoa(res.ExitCode)
		}
		d, ok := parse.ParseIptablesSave(res.Output)
		if !ok {
			return parse.IptDump{}, reasonUnrecognised
		}
		if d.NftVariant {
			continue
		}
		return d, ""
	}
	return parse.IptDump{}, reasonNoTool
}
