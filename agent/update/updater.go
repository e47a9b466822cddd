package update

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/yuzugo/yuzu/agent/fleetpb/agentv1"
	"github.com/yuzugo/yuzu/agent/fleetpb/commonv1"
	"github.com/yuzugo/yuzu/agent/trust"
	"github.com/yuzugo/yuzu/sdk/atomicfile"
	"github.com/yuzugo/yuzu/sdk/rows"
	"github.com/yuzugo/yuzu/sdk/semver"
)

// Config is what the Updater needs to know.
type Config struct {
	// Tree is the install tree the agent runs from; nil when it runs from anywhere
	// else, and Cannot says why it cannot update itself then.
	Tree   *Tree
	Cannot string
	// Keys are the publishers' keys (those with `agent: yes` may sign releases);
	// Floors the version floors, FloorsDir where they are kept.
	Keys      *trust.Keys
	FloorsDir string
	// StatePath is the update state (<data-dir>/update/state.json).
	StatePath string
	// Version is the running agent's; AgentID and Platform are sent with a check.
	Version  string
	AgentID  string
	GOOS     string
	GOARCH   string
	Platform *commonv1.Platform
	// SelfCheck runs a staged binary's self-check (it loads the configuration, the
	// plugins and their catalog without connecting); nil skips it.
	SelfCheck func(ctx context.Context, binary string) error
	// Switch makes the staged version current (Tree.Switch by default).
	Switch func(t Tree, version string) error
	// AfterSwitch, when set, runs once the switch is made and before the agent stops:
	// on Windows it starts the watchdog that restarts the service and decides the
	// trial. An error undoes the switch.
	AfterSwitch func(t Tree, from, to string) error
	Log         hclog.Logger
}

// Status is what the updater knows, for status and the metrics page.
type Status struct {
	Running   string    `json:"running"`
	Cannot    string    `json:"cannot,omitempty"`
	Offered   string    `json:"offered,omitempty"`
	LastCheck time.Time `json:"last_check,omitzero"`
	// LastResult words the last check: "up to date", "not eligible", an error, or
	// "switched to X".
	LastResult string     `json:"last_result,omitempty"`
	NextCheck  time.Time  `json:"next_check,omitzero"`
	Rollbacks  []Rollback `json:"rollbacks,omitempty"`
	Checks     uint64     `json:"checks"`
	Failures   uint64     `json:"failures"`
}

// Updater checks for, downloads, verifies, stages and switches to new agent versions.
type Updater struct {
	c Config

	mu     sync.Mutex
	status Status
	// refused remembers the offers refused (version -> why), so that one is logged
	// once, not at every check.
	refused map[string]string
}

// New returns an Updater.
func New(c Config) *Updater {
	if c.Log == nil {
		c.Log = hclog.NewNullLogger()
	}
	if c.Switch == nil {
		c.Switch = Tree.Switch
	}
	u := &Updater{c: c, refused: map[string]string{}}
	u.status.Running, u.status.Cannot = c.Version, c.Cannot
	if st, err := LoadState(c.StatePath); err == nil {
		u.status.Rollbacks = st.Rollbacks
	}
	return u
}

// Status returns a copy of the status.
func (u *Updater) Status() Status {
	u.mu.Lock()
	defer u.mu.Unlock()
	s := u.status
	s.Rollbacks = append([]Rollback(nil), s.Rollbacks...)
	return s
}

// SetNext records when the next check is due.
func (u *Updater) SetNext(t time.Time) {
	u.mu.Lock()
	u.status.NextCheck = t
	u.mu.Unlock()
}

func (u *Updater) record(offered, result string, failed bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.status.LastCheck = time.Now().UTC()
	u.status.Offered, u.status.LastResult = offered, result
	u.status.Checks++
	if failed {
		u.status.Failures++
	}
}

// Result is what a check came to.
type Result struct {
	// Switched is the version the agent switched to: it must now stop to be
	// restarted on it. "" when nothing changed.
	Switched string
	// Mandatory says the server wants it at once.
	Mandatory bool
}

// Check asks the server over client whether a newer build is offered and, when one
// is that this agent may take, downloads it (into the install tree's own file
// system), verifies its bundle, stages it, runs its self-check and switches to it.
// The version floor rises once the switch is made. An offer refused is logged once
// per version; a failure is returned for the log and the next check tries again.
func (u *Updater) Check(ctx context.Context, client agentv1.AgentServiceClient) (Result, error) {
	resp, err := client.CheckForUpdate(ctx, &agentv1.CheckForUpdateRequest{AgentId: u.c.AgentID, CurrentVersion: u.c.Version, Platform: u.c.Platform})
	if err != nil {
		u.record("", "check failed: "+err.Error(), true)
		return Result{}, fmt.Errorf("update check: %w", err)
	}
	offered := resp.GetLatestVersion()
	switch {
	case !resp.GetUpdateAvailable():
		u.record(offered, "up to date", false)
		return Result{}, nil
	case !resp.GetEligible():
		u.record(offered, "offered "+offered+", but this agent is not in its rollout", false)
		return Result{}, nil
	}
	if why := u.refusal(offered, resp); why != "" {
		u.refuse(offered, why)
		return Result{}, nil
	}
	version, err := u.apply(ctx, client, resp)
	if err != nil {
		u.record(offered, err.Error(), true)
		if errors.Is(err, errRefused) {
			u.refuse(offered, err.Error())
			return Result{}, nil
		}
		return Result{}, err
	}
	u.record(offered, "switched to "+version, false)
	return Result{Switched: version, Mandatory: resp.GetMandatory()}, nil
}

// errRefused marks a payload the agent will not take (as opposed to a failure to get
// it): it is not asked for again until the server offers another version.
var errRefused = errors.New("refused")

type refusedError struct{ why string }

func (e *refusedError) Error() string   { return e.why }
func (e *refusedError) Is(t error) bool { return t == errRefused }

func refused(format string, args ...any) error { return &refusedError{fmt.Sprintf(format, args...)} }

// refusal says why an offer is not taken before anything is downloaded, or "".
func (u *Updater) refusal(offered string, resp *agentv1.CheckForUpdateResponse) string {
	switch {
	case u.c.Tree == nil:
		return "this agent cannot update itself: " + u.c.Cannot
	case !semver.Valid(offered):
		return fmt.Sprintf("the offered version %q is not a semantic version", offered)
	case !less(u.c.Version, offered):
		return fmt.Sprintf("the offered version %s is not newer than the running %s", offered, u.c.Version)
	case resp.GetFileSize() <= 0 || resp.GetFileSize() > MaxBundleBytes:
		return fmt.Sprintf("the offered payload's size %d is not between 1 byte and %d", resp.GetFileSize(), MaxBundleBytes)
	case !u.c.Keys.AgentReleases():
		return "no publisher may sign agent releases (no publisher file says `agent: yes`): the agent takes no release it cannot check (docs/fleet.md \"Updating the agent\")"
	}
	if st, err := LoadState(u.c.StatePath); err == nil && st.Bad[offered] != "" {
		return fmt.Sprintf("%s was rolled back before (%s); it is not tried again", offered, st.Bad[offered])
	}
	if floors, err := trust.LoadFloors(u.c.FloorsDir); err == nil {
		if f := floors.Floor(FloorName); f != "" && less(offered, f) {
			return fmt.Sprintf("the offered version %s is below the agent's version floor %s (a signed downgrade is refused)", offered, f)
		}
	}
	return ""
}

// refuse logs a refused offer once per version.
func (u *Updater) refuse(offered, why string) {
	u.mu.Lock()
	seen := u.refused[offered] == why
	u.refused[offered] = why
	u.mu.Unlock()
	u.record(offered, "refused "+offered+": "+why, false)
	if !seen {
		u.c.Log.Warn("agent update refused; the running version goes on", "offered", rows.Printable(offered), "running", u.c.Version, "reason", rows.Printable(why))
	}
}

// apply downloads, verifies, stages, self-checks and switches; it returns the version
// switched to.
func (u *Updater) apply(ctx context.Context, client agentv1.AgentServiceClient, resp *agentv1.CheckForUpdateResponse) (string, error) {
	t := *u.c.Tree
	offered, size := resp.GetLatestVersion(), resp.GetFileSize()
	if err := checkSpace(t.Root, 3*size); err != nil {
		return "", err
	}
	_ = t.Prune() // leftovers of an interrupted update go first
	path, err := u.download(ctx, client, t, offered, size, resp.GetSha256())
	if err != nil {
		return "", err
	}
	defer os.Remove(path)
	b, err := ReadBundleFile(path)
	if errors.Is(err, ErrNotBundle) {
		return "", refused("the payload of %s is %v (a bare binary, or another agent's build)", offered, err)
	}
	if err != nil {
		return "", refused("the payload of %s: %v", offered, err)
	}
	signed, err := b.Verify(u.c.Keys, u.c.GOOS, u.c.GOARCH)
	if err != nil {
		return "", refused("%v", err)
	}
	if b.Index.Version != offered {
		return "", refused("the bundle is version %s, the server offered %s", b.Index.Version, offered)
	}
	if err := t.Stage(b); err != nil {
		return "", fmt.Errorf("staging %s: %w", offered, err)
	}
	if u.c.SelfCheck != nil {
		cctx, cancel := context.WithTimeout(ctx, selfCheckTimeout)
		err := u.c.SelfCheck(cctx, t.Binary(offered))
		cancel()
		if err != nil {
			_ = os.RemoveAll(filepath.Join(t.Root, offered))
			return "", refused("the self-check of %s failed: %v", offered, err)
		}
	}
	from, err := t.Current()
	if err != nil {
		return "", err
	}
	if err := StartTrial(u.c.StatePath, offered, from, time.Now()); err != nil {
		return "", err
	}
	if err := u.c.Switch(t, offered); err != nil {
		return "", fmt.Errorf("switching to %s: %w", offered, err)
	}
	if u.c.AfterSwitch != nil {
		if err := u.c.AfterSwitch(t, from, offered); err != nil {
			// Nothing would decide the trial: undo the switch.
			rerr := t.Restore(from)
			if st, lerr := LoadState(u.c.StatePath); lerr == nil {
				st.Trial = nil
				_ = st.Save(u.c.StatePath)
			}
			return "", errors.Join(fmt.Errorf("after switching to %s: %w; switched back", offered, err), rerr)
		}
	}
	if floors, err := trust.LoadFloors(u.c.FloorsDir); err == nil && floors.Raise(FloorName, offered) {
		if err := floors.Save(); err != nil {
			u.c.Log.Warn("the agent's version floor was not saved", "error", err)
		}
	}
	u.c.Log.Info("agent update staged, checked and switched to; restarting on it", "from", from, "to", offered,
		"publisher", signed.Publisher, "keys", strings.Join(signed.KeyIDs, ","))
	return offered, nil
}

// selfCheckTimeout bounds a staged binary's self-check.
const selfCheckTimeout = 2 * time.Minute

// download receives the payload into a file in the tree's root (the file system the
// version is staged on: no rename across devices), checking that the chunks follow
// each other, that every chunk says the same total, that the total is the size the
// check announced, and the SHA-256, hashed as the bytes arrive.
func (u *Updater) download(ctx context.Context, client agentv1.AgentServiceClient, t Tree, version string, size int64, wantSum string) (string, error) {
	stream, err := client.DownloadUpdate(ctx, &agentv1.DownloadUpdateRequest{AgentId: u.c.AgentID, Version: version, Platform: u.c.Platform})
	if err != nil {
		return "", fmt.Errorf("download of %s: %w", version, err)
	}
	f, err := os.CreateTemp(t.Root, ".download-"+version+"-")
	if err != nil {
		return "", err
	}
	path := f.Name()
	fail := func(err error) (string, error) {
		f.Close()
		os.Remove(path)
		return "", err
	}
	h := sha256.New()
	var got int64
	for {
		c, err := stream.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fail(fmt.Errorf("download of %s at byte %d: %w", version, got, err))
		}
		switch {
		case c.GetOffset() != got:
			return fail(refused("download of %s: a chunk at offset %d where %d was next", version, c.GetOffset(), got))
		case c.GetTotalSize() != size:
			return fail(refused("download of %s: a chunk says %d bytes in all, the check said %d", version, c.GetTotalSize(), size))
		case got+int64(len(c.GetData())) > size:
			return fail(refused("download of %s: more than the %d bytes announced", version, size))
		}
		if _, err := f.Write(c.GetData()); err != nil {
			return fail(fmt.Errorf("download of %s: %w", version, err))
		}
		h.Write(c.GetData())
		got += int64(len(c.GetData()))
	}
	if got != size {
		return fail(fmt.Errorf("download of %s: %d of %d bytes arrived", version, got, size))
	}
	if sum := hex.EncodeToString(h.Sum(nil)); wantSum != "" && !strings.EqualFold(sum, wantSum) {
		return fail(refused("download of %s: SHA-256 %s, the check said %s (altered in flight)", version, sum, wantSum))
	}
	if err := atomicfile.SyncFile(f); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		os.Remove(path)
		return "", err
	}
	return path, nil
}

// less orders versions by semantic-version precedence, where build metadata counts for
// nothing (semver 2.0.0, item 10): 1.2.0+87 is not newer than 1.2.0+42, so a build
// that differs only in its metadata is no update. Versions that are not semantic are
// never less.
func less(a, b string) bool {
	c, ok := semver.Compare(a, b)
	return ok && c < 0
}
