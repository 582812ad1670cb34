#ifndef PEERMESH_FILE_WRITEBACK_H
#define PEERMESH_FILE_WRITEBACK_H

#include <sys/types.h>

/// Asks the kernel to start writing `count` bytes of `fd` at `offset` to disk, without waiting for them
/// (Linux's sync_file_range with SYNC_FILE_RANGE_WRITE). Returns 0, or -1 with errno set; elsewhere it does
/// nothing and returns 0. It promises nothing about durability: that is fdatasync's job.
int pm_start_writeback(int fd, off_t offset, off_t count);

/// The open(2) flag that bypasses the page cache (O_DIRECT), or 0 where there is none.
int pm_direct_io_flag(void);

#endif
