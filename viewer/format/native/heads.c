/* The first bytes of many small files at once: for each path, open, fstat, wait for a write
 * in progress (lseek SEEK_DATA, as handles.wait_for_writers), pread, fstat again, close.  A
 * metadata check of a dataset of one file per chunk (a WKW header and jump table, an N5 chunk
 * header) needs only these bytes of each file; done here for a whole batch, the system calls
 * run without the interpreter lock (ctypes releases it for the call), so the caller's threads
 * overlap, and no Python object is made per file.
 *
 * Nothing is judged here: every outcome is reported (errno, bytes read, the file's identity,
 * whether it changed during the read) and the caller decides what is sound.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef O_CLOEXEC
#define O_CLOEXEC 0
#endif

/* Slots of info per file. */
enum { H_ERRNO = 0, H_GOT, H_DEV, H_INO, H_SIZE, H_MTIME, H_CTIME, H_CHANGED, H_SLOTS };

int64_t heads_abi(void) { return 1; }

int64_t heads_slots(void) { return H_SLOTS; }

static int64_t stat_ns(const struct timespec *t) {
    return (int64_t)t->tv_sec * 1000000000LL + (int64_t)t->tv_nsec;
}

static int same(const struct stat *a, const struct stat *b) {
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size
        && stat_ns(&a->st_mtim) == stat_ns(&b->st_mtim)
        && stat_ns(&a->st_ctim) == stat_ns(&b->st_ctim);
}

/* Read up to `want` first bytes of each of `n` files.  Path i is the NUL-terminated string at
 * paths + starts[i]; its bytes go to out + i * want, its outcome to info + i * H_SLOTS
 * (errno: 0 when read; got: bytes read, fewer at the end of the file; the first fstat's
 * device, inode, size, modification and change times in ns; changed: 1 when the second
 * fstat differs).  Returns n. */
int64_t heads_read(const char *paths, const int64_t *starts, int64_t n, int64_t want,
                   uint8_t *out, int64_t *info) {
    for (int64_t i = 0; i < n; i++) {
        int64_t *slot = info + i * H_SLOTS;
        for (int k = 0; k < H_SLOTS; k++) slot[k] = 0;
        int fd;
        do {
            fd = open(paths + starts[i], O_RDONLY | O_CLOEXEC);
        } while (fd < 0 && errno == EINTR);
        if (fd < 0) {
            slot[H_ERRNO] = errno ? errno : EIO;
            continue;
        }
        struct stat before, after;
        if (fstat(fd, &before) != 0) {
            slot[H_ERRNO] = errno ? errno : EIO;
            close(fd);
            continue;
        }
        slot[H_DEV] = (int64_t)before.st_dev;
        slot[H_INO] = (int64_t)before.st_ino;
        slot[H_SIZE] = (int64_t)before.st_size;
        slot[H_MTIME] = stat_ns(&before.st_mtim);
        slot[H_CTIME] = stat_ns(&before.st_ctim);
#ifdef SEEK_DATA
        (void)lseek(fd, 0, SEEK_DATA); /* waits for a write in progress; ENXIO is fine */
#endif
        uint8_t *dst = out + i * want;
        int64_t got = 0;
        while (got < want) {
            ssize_t r = pread(fd, dst + got, (size_t)(want - got), (off_t)got);
            if (r < 0) {
                if (errno == EINTR) continue;
                slot[H_ERRNO] = errno ? errno : EIO;
                break;
            }
            if (r == 0) break;
            got += r;
        }
        slot[H_GOT] = got;
        if (fstat(fd, &after) != 0 || !same(&before, &after)) slot[H_CHANGED] = 1;
        close(fd);
    }
    return n;
}
