package supervisor

import (
	"fmt"
	"time"
)

// The health ping runs beside the keeper's state machine: it only watches one child
// and kills it when it stops answering; the keeper hears of the death as of any other
// and restarts the plugin.

// ping checks the child every PingInterval; PingMisses missed answers in a row kill it,
// and run then restarts it like any other death.
func (k *keeper) ping(c *child) {
	o := k.sup.opts
	t := time.NewTicker(o.PingInterval)
	defer t.Stop()
	misses := 0
	for {
		select {
		case <-c.Exited():
			return
		case <-t.C:
		}
		if err := c.Ping(o.PingInterval); err != nil {
			misses++
			k.logger().Warn("health ping failed", "misses", misses, "error", err)
			if misses >= o.PingMisses {
				k.kill(c, fmt.Sprintf("no answer to %d health pings", misses))
				return
			}
		} else {
			misses = 0
		}
	}
}
