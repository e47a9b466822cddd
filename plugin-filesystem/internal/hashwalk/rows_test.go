package hashwalk

import (
	"reflect"
	"strings"
	"testing"

	"github.com/yuzugo/yuzu/sdk/rows"
)

// rowText is the rows' raw text, one a line.
func rowText(rs []Row) string { return strings.Join(rows.Texts(rs), "\n") }

func TestRowsAndStatus(t *testing.T) {
	tests := []struct {
		name     string
		r        Result
		want     string
		wantProv string
	}{
		{
			name: "clean, nothing found",
			r:    Result{Reason: ReasonNone, Counters: Counters{Visited: 3, Hashed: 10}},
			want: "matches_found|0",
		},
		{
			name: "zero value reason reads as none",
			r:    Result{Counters: Counters{SkippedSymlink: 1}},
			want: "truncated|none|visited=0|hashed=0|skipped_unreadable=0|skipped_symlink=1|skipped_not_regular=0|skipped_oversize=0|skipped_network_mount=0\nmatches_found|0",
		},
		{
			name: "matches and symlinks do not constrain",
			r: Result{Reason: ReasonNone, Matches: []Match{{"/etc/hosts", 413}, {"/etc/a|b\nc\\", 0}},
				Counters: Counters{Visited: 1676, Hashed: 1922709, SkippedSymlink: 720}},
			want: "match|/etc/hosts|413\nmatch|/etc/a|b\nc\\|0\n" +
				"truncated|none|visited=1676|hashed=1922709|skipped_unreadable=0|skipped_symlink=720|skipped_not_regular=0|skipped_oversize=0|skipped_network_mount=0\n" +
				"matches_found|2",
		},
		{
			name: "not regular and per-file oversize do not constrain",
			r:    Result{Reason: ReasonNone, Counters: Counters{Visited: 2, SkippedNotRegular: 1, SkippedOversize: 1}},
			want: "truncated|none|visited=2|hashed=0|skipped_unreadable=0|skipped_symlink=0|skipped_not_regular=1|skipped_oversize=1|skipped_network_mount=0\nmatches_found|0",
		},
		{
			name: "unreadable wins over everything",
			r: Result{Reason: ReasonDeadline, GuardUnavailable: true, Matches: []Match{{"/private/etc/hosts", 213}},
				Counters: Counters{Visited: 261, Hashed: 2997701, SkippedUnreadable: 17, SkippedSymlink: 4, SkippedNetworkMount: 2}},
			want: "match|/private/etc/hosts|213\nnetwork_mount_guard|unavailable\n" +
				"truncated|deadline|visited=261|hashed=2997701|skipped_unreadable=17|skipped_symlink=4|skipped_not_regular=0|skipped_oversize=0|skipped_network_mount=2\n" +
				"matches_found|1",
			wantProv: "filesystem:skipped_unreadable",
		},
		{
			name:     "network mount before reasons",
			r:        Result{Reason: ReasonFileCap, Counters: Counters{SkippedNetworkMount: 1}},
			want:     "truncated|file_cap|visited=0|hashed=0|skipped_unreadable=0|skipped_symlink=0|skipped_not_regular=0|skipped_oversize=0|skipped_network_mount=1\nmatches_found|0",
			wantProv: "filesystem:skipped_network_mount",
		},
		{
			name:     "deadline",
			r:        Result{Reason: ReasonDeadline, GuardUnavailable: true, Counters: Counters{Visited: 9}},
			want:     "network_mount_guard|unavailable\ntruncated|deadline|visited=9|hashed=0|skipped_unreadable=0|skipped_symlink=0|skipped_not_regular=0|skipped_oversize=0|skipped_network_mount=0\nmatches_found|0",
			wantProv: "filesystem:deadline",
		},
		{
			name:     "file cap",
			r:        Result{Reason: ReasonFileCap, Counters: Counters{Visited: 50000}},
			want:     "truncated|file_cap|visited=50000|hashed=0|skipped_unreadable=0|skipped_symlink=0|skipped_not_regular=0|skipped_oversize=0|skipped_network_mount=0\nmatches_found|0",
			wantProv: "filesystem:file_cap",
		},
		{
			name:     "byte cap",
			r:        Result{Reason: ReasonByteCap, Counters: Counters{Visited: 3, Hashed: 4 << 30, SkippedOversize: 1}},
			want:     "truncated|byte_cap|visited=3|hashed=4294967296|skipped_unreadable=0|skipped_symlink=0|skipped_not_regular=0|skipped_oversize=1|skipped_network_mount=0\nmatches_found|0",
			wantProv: "filesystem:byte_cap",
		},
		{
			name:     "max results",
			r:        Result{Reason: ReasonMaxResults, Matches: []Match{{"/a", 1}}, Counters: Counters{Visited: 2, Hashed: 2}},
			want:     "match|/a|1\ntruncated|max_results|visited=2|hashed=2|skipped_unreadable=0|skipped_symlink=0|skipped_not_regular=0|skipped_oversize=0|skipped_network_mount=0\nmatches_found|1",
			wantProv: "filesystem:max_results",
		},
		{
			name:     "cancelled",
			r:        Result{Reason: ReasonCancelled},
			want:     "truncated|cancelled|visited=0|hashed=0|skipped_unreadable=0|skipped_symlink=0|skipped_not_regular=0|skipped_oversize=0|skipped_network_mount=0\nmatches_found|0",
			wantProv: "filesystem:cancelled",
		},
		{
			name:     "guard unavailable alone",
			r:        Result{Reason: ReasonNone, GuardUnavailable: true, Counters: Counters{Visited: 1, Hashed: 5}},
			want:     "network_mount_guard|unavailable\nmatches_found|0",
			wantProv: "filesystem:network_mount_guard_unavailable",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := rowText(Rows(tt.r)); got != tt.want {
				t.Errorf("rows:\n got %q\nwant %q", got, tt.want)
			}
			st := StatusOf(tt.r)
			want := Status{Constrained: tt.wantProv != "", Provenance: tt.wantProv}
			if st != want {
				t.Errorf("status = %+v, want %+v", st, want)
			}
		})
	}
}

func TestRowsFieldsAreRaw(t *testing.T) {
	rows := Rows(Result{Reason: ReasonNone, Matches: []Match{{"/x/a|b", 7}}})
	want := []Row{{Kind: "match", Fields: []string{"/x/a|b", "7"}}, {Kind: "matches_found", Fields: []string{"1"}}}
	if !reflect.DeepEqual(rows, want) {
		t.Fatalf("got %#v", rows)
	}
}
