# Swift: Debian trixie's swiftlang 6.0.3 (the compiler swiftc, the standard
# library, Foundation and Dispatch), about 2.5 GB installed, most of it the
# compiler's own LLVM and Clang. That is why it is an image of its own: no
# other language should pull it.
#
# The image is built on demand (registry "on_demand"): by `images build
# --all`, by naming swift or the image, and in CI, but not by `make run`'s
# default set. It builds on base so that it needs nothing else built first.
# swiftc links through the system linker and C runtime, so GCC's driver and
# libc6-dev come with it (swiftlang depends on gcc and binutils already).
#
# Debian packages only, without recommends: no swiftlang-doc, no
# swiftlang-dev (the Swift package manager's sources), no REPL's Python
# helpers (python3 is only suggested).
ARG BASE
FROM ${BASE}
ARG DEBIAN_FRONTEND=noninteractive
USER root
RUN apt-get update \
 && apt-get install -y --no-install-recommends swiftlang libc6-dev \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/log/apt /var/log/dpkg.log
USER 10001:10001
