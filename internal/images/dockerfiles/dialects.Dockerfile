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
#
# Debian packages Crystal for amd64 only, so an arm64 image has no Crystal
# (the registry's "architectures"; its compile command says so in a run).
ARG BASE
FROM ${BASE}
ARG DEBIAN_FRONTEND=noninteractive
USER root
RUN case "$(dpkg --print-architecture)" in amd64) crystal=crystal ;; *) crystal= ;; esac \
 && apt-get update \
 && apt-get install -y --no-install-recommends racket octave rakudo $crystal valac gcc libc6-dev \
      libgmp-dev libyaml-dev zlib1g-dev libssl-dev libgee-0.8-dev \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/log/apt /var/log/dpkg.log
USER 10001:10001
