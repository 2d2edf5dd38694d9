# Languages that are small, or odd, or both: Emacs Lisp (the editor's Lisp,
# run in batch mode), Fennel (a Lisp that compiles to Lua 5.4), Hy (a Lisp on
# Python 3), Forth (pforth, the portable Forth), jq (the JSON filter
# language), BASIC (yabasic), brainfuck (beef) and LLVM IR (run by lli, the
# LLVM interpreter and JIT).
#
# The image is built on demand (registry "on_demand"): by `images build
# --all`, by naming one of its languages or the image, and in CI, but not by
# `make run`'s default set. It builds on base, which already has Python 3 for
# Hy, so that it needs nothing else built first.
#
# Debian packages only, without recommends. Emacs: emacs-nox, whose
# dependencies Debian makes include emacs-el (the Lisp sources) and, for
# native compilation, libgccjit with binutils and libc6-dev; the sources of
# every library that has its byte-compiled .elc beside it are removed after
# the install (19 MB that a batch run never reads). LLVM: its runtime package
# alone (lli and libLLVM), not the llvm metapackage's tools nor clang, since
# lli runs an IR file as it is. Hy's own modules written in Hy are compiled
# to bytecode at build time: the sandbox cannot write their cache, and
# compiling them at each start took about half a second.
ARG BASE
FROM ${BASE}
ARG DEBIAN_FRONTEND=noninteractive
USER root
RUN apt-get update \
 && apt-get install -y --no-install-recommends emacs-nox fennel python3-hy pforth jq yabasic beef \
      llvm-19-runtime \
 && find /usr/share/emacs -name '*.el.gz' -exec sh -c 'for f; do [ -e "${f%.el.gz}.elc" ] && rm "$f"; done; true' sh {} + \
 && python3 -c 'import hy, hy.pyops, hy.core.util, hy.core.macros, hy.core.hy_repr' \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/log/apt /var/log/dpkg.log
USER 10001:10001
