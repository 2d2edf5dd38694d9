# Languages that are each the kin of a better-known one: Racket (a Scheme),
# GNU Octave (the MATLAB language), Raku (Perl's sister), Crystal (Ruby's
# syntax, compiled) and Vala (C#'s syntax on GLib, compiled through C).
#
# The image is built on demand (registry "on_demand"): by `images build
# --all`, by naming one of its languages or the image, and in CI, but not by
# `make run`'s default set. It builds on base rather than on native so that it
# needs nothing else built first: Crystal and Vala link through cc, so it
# carries GCC itself.
#
# Debian packages only, without recommends: no Octave documentation, no
# gnuplot or Java, no Racket documentation or GUI libraries. Crystal's
# recommended development libraries that its standard library links with are
# installed (GMP for BigInt, libyaml for YAML, zlib for Compress, OpenSSL for
# HTTP and Digest) except libxml2's, which pulls in ICU's 40 MB. Vala gets GLib
# (valac's dependency) and libgee, the collections library Vala code reaches
# for.
ARG BASE
FROM ${BASE}
ARG DEBIAN_FRONTEND=noninteractive
USER root
RUN apt-get update \
 && apt-get install -y --no-install-recommends racket octave rakudo crystal valac gcc libc6-dev \
      libgmp-dev libyaml-dev zlib1g-dev libssl-dev libgee-0.8-dev \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/log/apt /var/log/dpkg.log
# Crystal's compile cache of the standard library, filled by compiling a
# sample as /workspace/main.cr (the cache directory is named after the source
# path, so it matches the user's) with the sandbox's user and environment.
# The compile command copies it to the writable CRYSTAL_CACHE_DIR (6-7 MB):
# a hello world's code generation then drops from about 26 s to 3 s here under
# load, since the object files of the unchanged modules are reused.
COPY crystal-warm.cr /usr/share/mcp-code-runner/crystal-warm.cr
RUN install -d -o 10001 -g 10001 /opt/crystal-cache
USER 10001:10001
RUN cp /usr/share/mcp-code-runner/crystal-warm.cr /workspace/main.cr \
 && cd /workspace \
 && CRYSTAL_CACHE_DIR=/opt/crystal-cache crystal build --no-color -o /tmp/crystal-warm main.cr \
 && rm -f main.cr /tmp/crystal-warm \
 && chmod -R a+rX /opt/crystal-cache
