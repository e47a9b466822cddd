package fleetserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"hash/fnv"
	"sort"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/yuzugo/yuzu/agent/fleetpb/agentv1"
	"github.com/yuzugo/yuzu/sdk/semver"
)

// The agent's own updates (upstream's CheckForUpdate and DownloadUpdate): a catalog of
// agent builds keyed by system, architecture and version, each with the payload the
// agents download (a signed bundle, or anything a test wants to serve), whether it is
// mandatory, and the share of agents its rollout reaches.

// AgentBuild is one agent build the server offers.
type AgentBuild struct {
	// OS and Arch as the agents report them in Platform: "linux", "windows",
	// "darwin"; "x86_64", "aarch64" (PlatformArch maps Go's names).
	OS, Arch string
	Version  string
	// Payload is what DownloadUpdate streams.
	Payload   []byte
	Mandatory bool
	// Share is the percentage of agents eligible (Eligible), 0 to 100.
	Share int
	// Corrupt flips one byte of the stream in flight (after the announced SHA-256 was
	// computed), as a network that alters data would.
	Corrupt bool
	// ChunkDelay slows each chunk, so that a download can be interrupted.
	ChunkDelay time.Duration
}

// PlatformArch is the agent's name for a Go architecture (as its registration says).
func PlatformArch(goarch string) string {
	switch goarch {
	case "amd64":
		return "x86_64"
	case "arm64":
		return "aarch64"
	case "arm":
		return "armv7"
	case "386":
		return "x86"
	}
	return goarch
}

// Eligible says whether an agent is in a rollout of share percent: the FNV-1a 32-bit
// hash of its id, modulo 100, is below share. Stable for an agent id on any server
// (a rollout that grows keeps every agent it had), and reproducible by anyone.
func Eligible(agentID string, share int) bool {
	h := fnv.New32a()
	_, _ = h.Write([]byte(agentID))
	return int(h.Sum32()%100) < share
}

// UpdateCheck is one CheckForUpdate the server answered.
type UpdateCheck struct {
	AgentID string
	Current string
	At      time.Time
	Offered string
}

// agentBuilds is the catalog, guarded by its own lock.
type agentBuilds struct {
	mu     sync.Mutex
	builds []*AgentBuild
	checks []UpdateCheck
}

// PublishAgent offers a build (replacing one of the same system, architecture and
// version).
func (s *Server) PublishAgent(b AgentBuild) {
	c := &s.updates
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, o := range c.builds {
		if o.OS == b.OS && o.Arch == b.Arch && o.Version == b.Version {
			c.builds[i] = &b
			return
		}
	}
	c.builds = append(c.builds, &b)
}

// UpdateChecks lists the checks answered so far.
func (s *Server) UpdateChecks() []UpdateCheck {
	c := &s.updates
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]UpdateCheck(nil), c.checks...)
}

// latest is the newest build for a platform.
func (c *agentBuilds) latest(os, arch string) *AgentBuild {
	var best *AgentBuild
	for _, b := range c.builds {
		if b.OS != os || b.Arch != arch {
			continue
		}
		if best == nil {
			best = b
			continue
		}
		if cmp, ok := semver.Compare(best.Version, b.Version); ok && cmp < 0 {
			best = b
		}
	}
	return best
}

func (v *service) CheckForUpdate(_ context.Context, req *agentv1.CheckForUpdateRequest) (*agentv1.CheckForUpdateResponse, error) {
	c := &v.s.updates
	c.mu.Lock()
	defer c.mu.Unlock()
	p := req.GetPlatform()
	b := c.latest(p.GetOs(), p.GetArch())
	check := UpdateCheck{AgentID: req.GetAgentId(), Current: req.GetCurrentVersion(), At: time.Now()}
	defer func() { c.checks = append(c.checks, check); v.s.notifyLocked() }()
	if b == nil {
		return &agentv1.CheckForUpdateResponse{}, nil
	}
	cmp, ok := semver.Compare(req.GetCurrentVersion(), b.Version)
	if !ok || cmp >= 0 {
		return &agentv1.CheckForUpdateResponse{LatestVersion: b.Version}, nil
	}
	check.Offered = b.Version
	sum := sha256.Sum256(b.Payload)
	return &agentv1.CheckForUpdateResponse{
		UpdateAvailable: true, LatestVersion: b.Version, Sha256: hex.EncodeToString(sum[:]),
		Mandatory: b.Mandatory, Eligible: Eligible(req.GetAgentId(), b.Share), FileSize: int64(len(b.Payload)),
	}, nil
}

// updateChunk is upstream's chunk size.
const updateChunk = 64 << 10

func (v *service) DownloadUpdate(req *agentv1.DownloadUpdateRequest, stream agentv1.AgentService_DownloadUpdateServer) error {
	c := &v.s.updates
	c.mu.Lock()
	var b *AgentBuild
	for _, o := range c.builds {
		if o.OS == req.GetPlatform().GetOs() && o.Arch == req.GetPlatform().GetArch() && o.Version == req.GetVersion() {
			b = o
		}
	}
	c.mu.Unlock()
	if b == nil {
		return status.Errorf(codes.NotFound, "no agent build %s for %s/%s", req.GetVersion(), req.GetPlatform().GetOs(), req.GetPlatform().GetArch())
	}
	data := b.Payload
	if b.Corrupt {
		data = append([]byte(nil), data...)
		data[len(data)/2] ^= 0x01
	}
	total := int64(len(data))
	for off := 0; off < len(data); off += updateChunk {
		if b.ChunkDelay > 0 {
			select {
			case <-time.After(b.ChunkDelay):
			case <-stream.Context().Done():
				return stream.Context().Err()
			}
		}
		end := min(off+updateChunk, len(data))
		if err := stream.Send(&agentv1.DownloadUpdateChunk{Data: data[off:end], Offset: int64(off), TotalSize: total}); err != nil {
			return err
		}
	}
	return nil
}

// CheckTimes are the times of the update checks after t, in order (for a histogram).
func (s *Server) CheckTimes(after time.Time) []time.Duration {
	var out []time.Duration
	for _, c := range s.UpdateChecks() {
		if c.At.After(after) {
			out = append(out, c.At.Sub(after))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
