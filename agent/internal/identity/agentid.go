package identity

import (
	"crypto/rand"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/yuzugo/yuzu/sdk/atomicfile"
	"github.com/yuzugo/yuzu/sdk/rows"
	"github.com/yuzugo/yuzu/sdk/safefile"
)

// maxAgentIDBytes bounds the agent_id file: an id is a UUID, 36 bytes.
const maxAgentIDBytes = 256

// ReadAgentID is the id `run` keeps in the data dir dataDir, or empty when none is
// kept yet. The file is read as one that someone else may have planted: no link, no
// FIFO, small, valid UTF-8, printable.
func ReadAgentID(dataDir string) (string, error) {
	path := filepath.Join(dataDir, "agent_id")
	b, err := safefile.ReadFile(path, maxAgentIDBytes)
	if errors.Is(err, safefile.ErrNotRegular) || errors.Is(err, safefile.ErrTooLarge) {
		return "", fmt.Errorf("agent id file: %w", err)
	}
	if err != nil {
		return "", nil // no id kept yet
	}
	id := strings.TrimSpace(string(b))
	if !utf8.ValidString(id) || rows.Printable(id) != id {
		return "", fmt.Errorf("agent id file %s holds bytes that are not printable UTF-8", path)
	}
	return id, nil
}

// KeepAgentID returns the id kept in the data dir dataDir, else a new random UUID
// which it keeps there (mode 0600) for the next start.
func KeepAgentID(dataDir string) (string, error) {
	id, err := ReadAgentID(dataDir)
	if err != nil || id != "" {
		return id, err
	}
	id, err = newUUID()
	if err != nil {
		return "", err
	}
	path := filepath.Join(dataDir, "agent_id")
	if err := atomicfile.WriteMode(path, []byte(id+"\n"), 0o600); err != nil {
		var syncErr *atomicfile.DirSyncError
		if !errors.As(err, &syncErr) {
			return "", fmt.Errorf("keeping the agent id: %w", err)
		}
	}
	return id, nil
}

// newUUID returns a random (version 4) UUID.
func newUUID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16]), nil
}
