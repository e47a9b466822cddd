package sdk

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// The kernel keeps the environment a process was started with where exec put it, on
// the first thread's stack, and /proc/PID/environ shows that memory: os.Unsetenv
// changes only Go's copy. A plugin runs as root and its actions read files for the
// fleet (search path=/proc/self/environ), so the key of its mutual TLS, handed over in
// wire.ServerTLSEnv, must not stay there: scrubEnvBlock overwrites the value in place,
// through /proc/self/mem, at the addresses /proc/self/stat gives for the block.

// maxEnvBlock bounds how much of the block is read: the kernel's own limit on the
// arguments and environment of one exec is a quarter of the stack limit, and 8 MiB
// covers the default.
const maxEnvBlock = 8 << 20

// scrubEnvBlock overwrites with zero bytes the value of every name=... entry of the
// process's initial environment block. The entry's name stays, so that
// /proc/self/environ shows the variable was there and was cleared.
func scrubEnvBlock(name string) error {
	start, end, err := envBlock()
	if err != nil {
		return err
	}
	if end <= start || end-start > maxEnvBlock {
		return fmt.Errorf("environment block of %d bytes", end-start)
	}
	mem, err := os.OpenFile("/proc/self/mem", os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer mem.Close()
	block := make([]byte, end-start)
	if _, err := mem.ReadAt(block, int64(start)); err != nil {
		return fmt.Errorf("reading the environment block: %w", err)
	}
	prefix := []byte(name + "=")
	found := false
	for off := 0; off < len(block); {
		n := bytes.IndexByte(block[off:], 0)
		if n < 0 {
			n = len(block) - off
		}
		if bytes.HasPrefix(block[off:off+n], prefix) {
			from, to := off+len(prefix), off+n
			if to > from {
				if _, err := mem.WriteAt(make([]byte, to-from), int64(start)+int64(from)); err != nil {
					return fmt.Errorf("clearing %s in the environment block: %w", name, err)
				}
			}
			found = true
		}
		off += n + 1
	}
	if !found {
		return fmt.Errorf("%s not found in the environment block", name)
	}
	return nil
}

// envBlock reads env_start and env_end, fields 50 and 51 of /proc/self/stat (Linux
// 3.5 and later). The fields after the command name, which may hold spaces and
// parentheses, start after its last ')'.
func envBlock() (start, end uint64, err error) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0, 0, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, errors.New("/proc/self/stat: no command name")
	}
	f := strings.Fields(string(b[i+1:])) // f[0] is field 3
	if len(f) < 51-2 {
		return 0, 0, errors.New("/proc/self/stat: no env_start and env_end (kernel before 3.5)")
	}
	if start, err = strconv.ParseUint(f[50-3], 10, 64); err == nil {
		end, err = strconv.ParseUint(f[51-3], 10, 64)
	}
	if err != nil {
		return 0, 0, fmt.Errorf("/proc/self/stat: %w", err)
	}
	return start, end, nil
}
