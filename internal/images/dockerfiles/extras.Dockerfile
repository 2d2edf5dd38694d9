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
# Debian packages only, without recommends: emacs-nox without its Lisp
# sources (emacs-el) or documentation; LLVM's runtime package alone (lli and
# libLLVM), not the llvm metapackage's tools nor clang, since lli runs an IR
# file as it is.
ARG BASE
FROM ${BASE}
ARG DEBIAN_FRONTEND=noninteractive
USER root
RUN apt-get update \
 && apt-get install -y --no-install-recommends emacs-nox fennel python3-hy pforth jq yabasic beef \
      llvm-19-runtime \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/log/apt /var/log/dpkg.log
USER 10001:10001
