package metrics

import (
	"bytes"
	"os"
	"strconv"

	"github.com/yuzugo/yuzu/sdk/safefile"
)

// statmLimit bounds the read of /proc/self/statm: seven decimal page counts, well
// under a hundred bytes.
const statmLimit = 256

// residentBytes is the process's resident set size: the second field of
// /proc/self/statm, in pages.
func residentBytes() (uint64, bool) {
	data, err := safefile.ReadFile("/proc/self/statm", statmLimit)
	if err != nil {
		return 0, false
	}
	return parseStatm(data, uint64(os.Getpagesize()))
}

// parseStatm reads the resident page count out of statm's text.
func parseStatm(data []byte, pageSize uint64) (uint64, bool) {
	fields := bytes.Fields(data)
	if len(fields) < 2 {
		return 0, false
	}
	pages, err := strconv.ParseUint(string(fields[1]), 10, 64)
	if err != nil {
		return 0, false
	}
	return pages * pageSize, true
}
