# Compiled-to-machine-code languages that share one GCC toolchain (compiler
# driver, assembler, linker, C library headers): C (gcc), C++ (g++),
# Fortran (gfortran), D (gdc), Pascal (Free Pascal links with GNU ld) and
# Rust (rustc links through cc). Each would otherwise carry its own copy of
# binutils and GCC; together they cost one.
ARG BASE
FROM ${BASE}
ARG DEBIAN_FRONTEND=noninteractive
USER root
RUN apt-get update \
 && apt-get install -y --no-install-recommends gcc g++ gfortran gdc fp-compiler rustc \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/log/apt /var/log/dpkg.log
USER 10001:10001
