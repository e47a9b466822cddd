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

// The reader of the legacy tables (legacy.go holds what it learns and how that is
// judged, which is plain Go and tested on every system).

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
