package hashwalk

import "golang.org/x/sys/unix"

// The Linux hasher works on the raw descriptor the walk opened and judged: a
// file is read with read(2) straight into the hasher's buffer, which takes
// most files in one call, with no call to meet end-of-file (hashStream).
//
// Mapping large files instead (mmap with MAP_POPULATE, hashing from the page
// cache without the kernel's copy) was measured and is slower on the
// machines we measure on: docs/filesystem.md, "find_by_hash: speed".

// readBufSize is the hasher's read size: one read(2) takes a file up to this
// size, and the buffer stays within a core's L2 cache, so the bytes the
// kernel copied are still there when SHA-256 reads them.
const readBufSize = 256 << 10

func closeFD(fd int) { unix.Close(fd) }

func (e *engine) hashFD(j *job, hs *hasher) {
	defer unix.Close(j.fd)
	hashStream(e, j, fdFile(j.fd), hs.buf, hs.h, hs.sum)
}
