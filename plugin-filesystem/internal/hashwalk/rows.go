package hashwalk

import (
	"strconv"

	"github.com/yuzugo/yuzu/sdk/rows"
)

// Row is one output row; the SDK escapes its fields when the action writes it.
type Row = rows.Row

// Rows turns a result into find_by_hash's rows, in order: one match row per
// match, network_mount_guard|unavailable when the walk ran unguarded, one
// truncated row when anything was skipped or the walk stopped early, and the
// matches_found count.
func Rows(r Result) []Row {
	rows := make([]Row, 0, len(r.Matches)+3)
	for _, m := range r.Matches {
		rows = append(rows, Row{Kind: "match", Fields: []string{m.Path, strconv.FormatInt(m.Size, 10)}})
	}
	if r.GuardUnavailable {
		rows = append(rows, Row{Kind: "network_mount_guard", Fields: []string{"unavailable"}})
	}
	if r.Reason != ReasonNone || r.skippedAny() {
		c := r.Counters
		reason := r.Reason
		if reason == "" {
			reason = ReasonNone
		}
		rows = append(rows, Row{Kind: "truncated", Fields: []string{
			string(reason),
			"visited=" + strconv.FormatInt(c.Visited, 10),
			"hashed=" + strconv.FormatInt(c.Hashed, 10),
			"skipped_unreadable=" + strconv.FormatInt(c.SkippedUnreadable, 10),
			"skipped_symlink=" + strconv.FormatInt(c.SkippedSymlink, 10),
			"skipped_not_regular=" + strconv.FormatInt(c.SkippedNotRegular, 10),
			"skipped_oversize=" + strconv.FormatInt(c.SkippedOversize, 10),
			"skipped_network_mount=" + strconv.FormatInt(c.SkippedNetworkMount, 10),
		}})
	}
	rows = append(rows, Row{Kind: "matches_found", Fields: []string{strconv.Itoa(len(r.Matches))}})
	return rows
}

func (r Result) skippedAny() bool {
	c := r.Counters
	return c.SkippedUnreadable > 0 || c.SkippedSymlink > 0 || c.SkippedNotRegular > 0 ||
		c.SkippedOversize > 0 || c.SkippedNetworkMount > 0
}

// Status is the typed result status of a walk in plain values. Constrained
// means CONSTRAINED / PARTIAL with Provenance; otherwise the status is left
// undeclared.
type Status struct {
	Constrained bool
	// Provenance is "filesystem:<cause>" when Constrained, else empty.
	Provenance string
}

// Cause returns why a result is incomplete, or "" when it is not: the first
// that applies of skipped_unreadable, skipped_network_mount, deadline,
// file_cap, byte_cap, max_results, cancelled and
// network_mount_guard_unavailable. Skipped symlinks, non-regular entries and
// files over the per-file cap are skipped by design and never constrain.
func Cause(r Result) string {
	switch {
	case r.SkippedUnreadable > 0:
		return "skipped_unreadable"
	case r.SkippedNetworkMount > 0:
		return "skipped_network_mount"
	}
	for _, reason := range []Reason{ReasonDeadline, ReasonFileCap, ReasonByteCap, ReasonMaxResults, ReasonCancelled} {
		if r.Reason == reason {
			return string(reason)
		}
	}
	if r.GuardUnavailable {
		return "network_mount_guard_unavailable"
	}
	return ""
}

// StatusOf returns the typed status of a result.
func StatusOf(r Result) Status {
	c := Cause(r)
	if c == "" {
		return Status{}
	}
	return Status{Constrained: true, Provenance: "filesystem:" + c}
}
