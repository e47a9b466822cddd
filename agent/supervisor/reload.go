package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/yuzugo/yuzu/agent/trust"
)

// Following the catalog (docs/agent.md "Upgrades and rollback"): a long-lived agent
// (run, shell) reads the catalog again when it changes, so that `plugins add`,
// `plugins remove`, `plugins rollback` and a plugin delivered by the fleet take effect
// without a restart. `plugins add` tells a running `run` at once through its status
// socket (Reload); Watch also looks at the catalog's file every few seconds, for every
// other writer (a package's scripts, an operator's editor, a shell beside a run).

// catalogStamp identifies one version of the catalog file: a rename over it (how the
// catalog is always written) changes the file's identity, a write in place its size
// or time.
type catalogStamp struct {
	fi  os.FileInfo
	err string
}

func stampOf(dir string) catalogStamp {
	fi, err := os.Stat(trust.Path(dir))
	if err != nil {
		return catalogStamp{err: err.Error()}
	}
	return catalogStamp{fi: fi}
}

func (a catalogStamp) same(b catalogStamp) bool {
	if a.fi == nil || b.fi == nil {
		return a.fi == nil && b.fi == nil && a.err == b.err
	}
	return os.SameFile(a.fi, b.fi) && a.fi.Size() == b.fi.Size() && a.fi.ModTime().Equal(b.fi.ModTime())
}

// Change is what one Reload did to one plugin.
type Change struct {
	Plugin string
	// Kind is "added", "removed", "upgraded" (another build), "refused" (the new
	// build may not run) or "updated" (the same bytes described anew).
	Kind string
	// From and To name the builds ("" for none).
	From, To string
}

// Reload reads the catalog again and applies what changed: a new plugin gets a
// keeper; a plugin the catalog no longer names stops taking commands, finishes those
// it holds and is gone; a plugin whose build changed is upgraded (upgrade.go). A
// catalog that cannot be read changes nothing (the running plugins stay as they
// are) and is returned as the error.
func (s *Supervisor) Reload() ([]Change, error) {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	stamp := stampOf(s.opts.PluginDir)
	view, err := discover(s.opts.PluginDir, s.opts.Keys)
	if err != nil {
		return nil, err
	}
	cat, err := trust.Load(s.opts.PluginDir)
	if err != nil {
		return nil, fmt.Errorf("the catalog was not read again, the plugins run as they were: %w", err)
	}
	for _, n := range view.notes {
		s.log.Info(n)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, errShuttingDown
	}
	s.seen = stamp
	var changes []Change
	var handled []chan struct{}
	for _, name := range sortedNames(view.bins) {
		b := s.admit(name, view.bins[name])
		k, ok := s.keepers[name]
		if !ok {
			s.keepers[name] = newKeeper(s, b.Binary, b.refused)
			changes = append(changes, Change{Plugin: name, Kind: "added", To: b.Build})
			s.log.Info("plugin added to the catalog", "plugin", name, "build", b.Build)
			continue
		}
		cur := k.status()
		var prev *Binary
		if e := cat.Entry(name); e != nil && e.Previous != nil {
			p := binaryOf(s.opts.PluginDir, name, e.Previous)
			prev = &p
		}
		// The keeper compares the bytes; the kind here only words the change.
		switch {
		case b.refused != nil && cur.State == StateRefused && cur.Build == b.Build:
			continue
		case b.refused != nil:
			changes = append(changes, Change{Plugin: name, Kind: "refused", From: cur.Build, To: b.Build})
		case cur.Build == b.Build && cur.Path == b.Path && cur.State != StateRefused:
			if cur.Trust != b.Trust {
				changes = append(changes, Change{Plugin: name, Kind: "updated", From: cur.Build, To: b.Build})
			}
		default:
			changes = append(changes, Change{Plugin: name, Kind: "upgraded", From: cur.Build, To: b.Build})
		}
		ev := evUpgrade{bin: b.Binary, prev: prev, refused: b.refused, done: make(chan struct{})}
		if k.send(ev) {
			handled = append(handled, ev.done)
		}
	}
	for name, k := range s.keepers {
		if _, still := view.bins[name]; still {
			continue
		}
		delete(s.keepers, name)
		s.draining[k] = true
		changes = append(changes, Change{Plugin: name, Kind: "removed", From: k.status().Build})
		s.log.Info("plugin removed from the catalog; it finishes the commands it holds", "plugin", name)
		ev := evRemove{done: make(chan struct{})}
		if k.send(ev) {
			handled = append(handled, ev.done)
		}
		go func() {
			<-k.quit
			s.mu.Lock()
			delete(s.draining, k)
			s.mu.Unlock()
		}()
	}
	s.mu.Unlock()
	// Each keeper takes its event at once (it only starts what it must): once all
	// have, Status shows the starts the reload caused.
	for _, d := range handled {
		<-d
	}
	return changes, nil
}

// Watch reloads the catalog whenever its file changes, looking every interval, until
// ctx ends. A catalog that cannot be read is logged once per change of the file.
func (s *Supervisor) Watch(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s.reloadMu.Lock()
		changed := !stampOf(s.opts.PluginDir).same(s.seen)
		s.reloadMu.Unlock()
		if !changed {
			continue
		}
		if _, err := s.Reload(); err != nil {
			if errors.Is(err, errShuttingDown) {
				return
			}
			s.log.Error("plugin catalog changed but cannot be used", "error", err)
			s.reloadMu.Lock()
			s.seen = stampOf(s.opts.PluginDir) // said once per change of the file
			s.reloadMu.Unlock()
		}
	}
}

// Settle waits until no plugin is starting, trying a new build or waiting to try
// one again (a build on probation in backoff), or ctx ends: what `plugins add` waits
// for before it says how an upgrade went.
func (s *Supervisor) Settle(ctx context.Context) {
	for {
		busy := false
		for _, st := range s.Status() {
			if st.State == StateStarting || st.Upgrading || st.Probation && st.State == StateBackoff {
				busy = true
			}
		}
		if !busy {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// rolledBack records a rollback in the catalog (or with Options.OnRollback), in the
// background: the keeper has already gone back in memory.
func (s *Supervisor) rolledBack(name string, from, to Binary, reason string) {
	go func() {
		var err error
		if f := s.opts.OnRollback; f != nil {
			err = f(name, from, to, reason)
		} else {
			err = s.recordRollback(name, from, reason)
		}
		if err != nil {
			s.log.Error("plugin rolled back, but the catalog could not record it; this agent keeps the previous build while it runs",
				"plugin", name, "error", err)
		}
	}()
}

// recordRollback writes a rollback to the catalog: the previous build current again,
// the failed one remembered as rolled back, the floor set to the previous version.
func (s *Supervisor) recordRollback(name string, from Binary, reason string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	floors, err := trust.LoadFloors(s.opts.TrustDir)
	if err != nil {
		return err
	}
	_, _, err = trust.RollBack(ctx, s.opts.PluginDir, floors, name, fmt.Sprintf("%x", from.Checksum), reason)
	return err
}
