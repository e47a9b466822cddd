package main

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// fdDirPath returns /proc/self/fd/<n> for the directory f when that path leads to the
// same directory (procfs mounted and ours), else "". A name under it is looked up in
// the open directory itself, however the directory's own path changes meanwhile.
func fdDirPath(f *os.File, st *unix.Stat_t) string {
	p := "/proc/self/fd/" + strconv.Itoa(int(f.Fd()))
	var pst unix.Stat_t
	if unix.Stat(p, &pst) != nil || pst.Dev != st.Dev || pst.Ino != st.Ino {
		return ""
	}
	return p
}
