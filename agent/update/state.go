package update

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/yuzugo/yuzu/sdk/atomicfile"
	"github.com/yuzugo/yuzu/sdk/safefile"
)

// StateFile is the update state in the data dir's update directory.
const StateFile = "state.json"

// State is what a rollback is decided from, kept in <data-dir>/update/state.json and
// written whole or not at all.
type State struct {
	Format int `json:"format"`
	// Trial is the version switched to and not yet confirmed, nil when none is.
	Trial *Trial `json:"trial,omitempty"`
	// Bad are versions rolled back from, with why: not tried again until the server
	// offers another version.
	Bad map[string]string `json:"bad,omitempty"`
	// Rollbacks are the last rollbacks, newest last (at most maxRollbacks).
	Rollbacks []Rollback `json:"rollbacks,omitempty"`
}

// Trial is a version on trial: switched to from From at Switched; Starts counts the
// starts the guard let it have (one); Confirmed is set by that version once it has
// registered with the fleet server.
type Trial struct {
	Version     string    `json:"version"`
	From        string    `json:"from"`
	Switched    time.Time `json:"switched"`
	Starts      int       `json:"starts"`
	Confirmed   bool      `json:"confirmed"`
	ConfirmedAt time.Time `json:"confirmed_at,omitzero"`
}

// Rollback is one rollback: from a version to the one before, why, when.
type Rollback struct {
	From   string    `json:"from"`
	To     string    `json:"to"`
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
}

const (
	stateFormat  = 1
	maxRollbacks = 10
	maxStateSize = 1 << 20
)

// LoadState reads the state at path; none is an empty state. A state of a later
// format is an error: a guard older than the agent that wrote it must not guess.
func LoadState(path string) (*State, error) {
	st := &State{Format: stateFormat}
	b, err := safefile.ReadFile(path, maxStateSize)
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return nil, fmt.Errorf("update state: %w", err)
	}
	if err := json.Unmarshal(b, st); err != nil {
		return nil, fmt.Errorf("update state %s: %w", path, err)
	}
	if st.Format != stateFormat {
		return nil, fmt.Errorf("update state %s: format %d, this agent reads %d", path, st.Format, stateFormat)
	}
	return st, nil
}

// Save writes the state, whole or not at all, flushed to disk.
func (st *State) Save(path string) error {
	st.Format = stateFormat
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	err = atomicfile.WriteMode(path, append(b, '\n'), 0o600)
	var syncErr *atomicfile.DirSyncError
	if errors.As(err, &syncErr) {
		return nil
	}
	return err
}

// addRollback records one rollback, keeping the last maxRollbacks.
func (st *State) addRollback(r Rollback) {
	st.Rollbacks = append(st.Rollbacks, r)
	if len(st.Rollbacks) > maxRollbacks {
		st.Rollbacks = st.Rollbacks[len(st.Rollbacks)-maxRollbacks:]
	}
	if st.Bad == nil {
		st.Bad = map[string]string{}
	}
	st.Bad[r.From] = r.Reason
}

// StartTrial records a switch from one version to another, before it is made: the
// next start is the new version's trial.
func StartTrial(path, version, from string, now time.Time) error {
	st, err := LoadState(path)
	if err != nil {
		return err
	}
	st.Trial = &Trial{Version: version, From: from, Switched: now.UTC()}
	return st.Save(path)
}

// Confirm marks version's trial as passed (it registered): the guard then keeps it.
// It reports whether there was a trial of that version to confirm.
func Confirm(path, version string, now time.Time) (bool, error) {
	st, err := LoadState(path)
	if err != nil {
		return false, err
	}
	if st.Trial == nil || st.Trial.Version != version || st.Trial.Confirmed {
		return false, nil
	}
	st.Trial.Confirmed, st.Trial.ConfirmedAt = true, now.UTC()
	return true, st.Save(path)
}

// OnTrial says whether version runs on trial now: switched to, not confirmed yet.
func OnTrial(path, version string) bool {
	st, err := LoadState(path)
	return err == nil && st.Trial != nil && st.Trial.Version == version && !st.Trial.Confirmed
}

// Guard is run by the service manager before every start of the agent (docs/fleet.md
// "Updating the agent"), with a binary that is not the one a trial runs: the
// package's own. It decides from the state and the tree alone:
//
//   - no trial, or a trial confirmed: start what current names (a confirmed trial is
//     forgotten, the version kept);
//   - a trial that has not started yet: this start is its one start;
//   - a trial that started and never confirmed (it exited, crashed, hung past the
//     service manager's start timeout, or was killed before it registered): current
//     goes back to the version before, the trial version is marked bad (not tried
//     again until the server offers another), and that is started.
//
// So a version gets exactly one start to prove itself, and a rollback can happen
// once per trial: no loop. It returns what it decided, for the log.
func Guard(t Tree, statePath string, now time.Time) (string, error) {
	st, err := LoadState(statePath)
	if err != nil {
		return "", err
	}
	tr := st.Trial
	if tr == nil {
		return "no version on trial", nil
	}
	cur, err := t.Current()
	if err != nil {
		return "", err
	}
	switch {
	case tr.Confirmed:
		st.Trial = nil
		return fmt.Sprintf("%s passed its trial (registered at %s)", tr.Version, tr.ConfirmedAt.Format(time.RFC3339)), st.Save(statePath)
	case cur != tr.Version:
		// Someone else switched (a package upgrade, an operator): the trial is void.
		st.Trial = nil
		return fmt.Sprintf("the trial of %s ends: current is %s now", tr.Version, cur), st.Save(statePath)
	case tr.Starts == 0:
		tr.Starts = 1
		return fmt.Sprintf("%s starts on trial (switched from %s at %s)", tr.Version, tr.From, tr.Switched.Format(time.RFC3339)), st.Save(statePath)
	}
	reason := fmt.Sprintf("started at %s on trial and did not register with the fleet server (it exited, crashed, hung or was stopped before it did)",
		tr.Switched.Format(time.RFC3339))
	st.Trial = nil
	st.addRollback(Rollback{From: tr.Version, To: tr.From, Reason: reason, At: now.UTC()})
	if err := t.Restore(tr.From); err != nil {
		// Nothing to go back to: the failed version stays, marked bad, and the
		// service manager's own restarts go on. Saved first, so that this is decided
		// once.
		if serr := st.Save(statePath); serr != nil {
			return "", errors.Join(err, serr)
		}
		return "", fmt.Errorf("%s failed its trial, and %w", tr.Version, err)
	}
	if err := st.Save(statePath); err != nil {
		return "", err
	}
	return fmt.Sprintf("rolled back from %s to %s: %s", tr.Version, tr.From, reason), nil
}
