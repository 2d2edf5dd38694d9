package agent

import "syscall"

// syscallNoFollow refuses to open a symlink as the last path element.
const syscallNoFollow = syscall.O_NOFOLLOW
