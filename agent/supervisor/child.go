package supervisor

import (
	"sync/atomic"

	"github.com/yuzugo/yuzu/agent/internal/limits"
)

// child is a running child with the reason the agent ended it, if it did.
type child struct {
	Child
	// bin is the build the child runs.
	bin    Binary
	reason atomic.Pointer[string]
}

// setReason records why the agent is ending the child; the first reason wins.
func (c *child) setReason(r string) { c.reason.CompareAndSwap(nil, &r) }

func (c *child) why() string {
	if r := c.reason.Load(); r != nil {
		return *r
	}
	return ""
}

// boxed is a Child in a box with resource limits (the real launcher's).
type boxed interface{ Box() *limits.Box }

// box returns the child's box, nil when it has none.
func (c *child) box() *limits.Box {
	if b, ok := c.Child.(boxed); ok {
		return b.Box()
	}
	return nil
}

// memoryKilled returns the memory limit the kernel killed the child at, 0 when it
// did not.
func (c *child) memoryKilled() int64 {
	if b := c.box(); b.OOMKilled() {
		return b.Limits().MemoryBytes
	}
	return 0
}

// kill ends the child at once with a recorded reason; run hears of the exit and
// restarts the plugin.
func (k *keeper) kill(c *child, reason string) {
	c.setReason(reason)
	k.logger().Warn("killing plugin", "pid", c.Pid(), "reason", reason)
	c.Kill()
}
