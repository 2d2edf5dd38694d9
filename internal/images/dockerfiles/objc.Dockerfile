# Objective-C: GCC's front end (gobjc) and GCC's Objective-C runtime
# (libobjc), about 250 MB installed. Programs use the C library and classes
# rooted in the runtime's Object (objc/Object.h), or plain C functions.
#
# There is no Foundation (NSObject, NSString, NSLog, NSArray...): GNUstep's
# (libgnustep-base-dev) would add about 350 MB and 140 packages to the image,
# more than doubling it, for a language whose programs here are small.
#
# An image of its own rather than a part of swift's: the swift image has GCC
# already, so Objective-C would add only about 60 MB there, but every
# Objective-C run would then need the 2.5 GB Swift toolchain pulled and
# built first; this image is about a tenth of that.
#
# The image is built on demand (registry "on_demand"): by `images build
# --all`, by naming objective-c or the image, and in CI, but not by
# `make run`'s default set.
ARG BASE
FROM ${BASE}
ARG DEBIAN_FRONTEND=noninteractive
USER root
RUN apt-get update \
 && apt-get install -y --no-install-recommends gobjc libc6-dev \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/log/apt /var/log/dpkg.log
USER 10001:10001
