package supervisor

import (
	"sync"

	"github.com/yuzugo/yuzu/sdk"
	"github.com/yuzugo/yuzu/sdk/host"
	"github.com/yuzugo/yuzu/sdk/rows"
)

// rowStats counts the rows a plugin wrote that depart from its declarations
// (sdk.Action.CheckRow), by kind. Such rows are relayed all the same: the agent
// reports a plugin's broken promise, it does not edit the answer. Commands run on
// their callers' goroutines, hence the lock.
type rowStats struct {
	mu     sync.Mutex
	byKind map[string]int64
}

// maxRowKinds bounds the kinds counted apart: declared kinds are few, and undeclared
// ones are all counted as one (sdk.UndeclaredKind), so this only guards against a
// plugin declaring thousands.
const maxRowKinds = 64

// record counts a mismatch and reports whether it is the first of its kind.
func (s *rowStats) record(m *sdk.RowMismatch) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byKind == nil {
		s.byKind = map[string]int64{}
	}
	kind := m.Kind
	if _, seen := s.byKind[kind]; !seen && len(s.byKind) >= maxRowKinds {
		kind = sdk.UndeclaredKind
	}
	s.byKind[kind]++
	return s.byKind[kind] == 1
}

func (s *rowStats) counts() map[string]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return cloneCounts(s.byKind)
}

// maxLoggedRow bounds the row quoted in the log line of a first mismatch.
const maxLoggedRow = 256

// checkedRows wraps onRows so that every row is checked against the action's
// declaration in m; the first mismatch of each kind is logged (the row quoted,
// escaped and cut), every one counted. An action without declared rows, or one the
// manifest does not know, is not checked.
func (k *keeper) checkedRows(m host.Manifest, action string, onRows func([]string) error) func([]string) error {
	a, ok := m.Action(action)
	if !ok || len(a.Rows) == 0 {
		return onRows
	}
	return func(batch []string) error {
		for _, r := range batch {
			if bad := a.CheckRow(r); bad != nil && k.rows.record(bad) {
				if len(r) > maxLoggedRow {
					r = r[:maxLoggedRow] + "..."
				}
				k.logger().Warn("plugin wrote a row its declaration does not allow; it is relayed, and rows like it are counted (metrics: rows_mismatched), not logged again",
					"action", rows.Printable(action), "kind", rows.Printable(bad.Kind), "problem", rows.Printable(bad.Reason), "row", rows.Printable(r))
			}
		}
		return onRows(batch)
	}
}
