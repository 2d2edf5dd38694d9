# Compiled-to-machine-code languages that share one GCC toolchain (compiler
# driver, assembler, linker, C library headers): C (gcc), C++ (g++),
# Fortran (gfortran), D (gdc), Ada (GNAT is GCC's Ada front end), COBOL
# (GnuCOBOL compiles through gcc), Pascal (Free Pascal links with GNU ld),
# x86-64 assembly (NASM assembles, GNU ld or gcc links) and Rust (rustc
# links through cc). Each would otherwise carry its own copy of binutils and
# GCC; together they cost one.
#
# COBOL is GnuCOBOL 4.0-early-dev (Debian's gnucobol4). Debian's 3.2
# (gnucobol3) prints "Warning: program compiled against libxml 212 using
# older 209" on stderr at every run in trixie: its libcob is built against
# libxml2 2.12, while trixie ships 2.9.14. libcob 4 does not use libxml2.
ARG BASE
FROM ${BASE}
ARG DEBIAN_FRONTEND=noninteractive
USER root
RUN apt-get update \
 && apt-get install -y --no-install-recommends gcc g++ gfortran gdc gnat gnucobol4 nasm fp-compiler rustc \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/log/apt /var/log/dpkg.log
USER 10001:10001
