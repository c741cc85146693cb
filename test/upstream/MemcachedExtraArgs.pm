# SPDX-License-Identifier: BSD-3-Clause
# MemcachedExtraArgs: run memcached's own t/ suite with extra server
# options, without patching its harness. Loaded before any test file
# (memcached-t runs each as `perl -I<this directory> -MMemcachedExtraArgs
# t/FILE.t` from the memcached tree's top directory), it wraps
# MemcachedTest::new_memcached so every server a test starts gets
# $ENV{T_MEMD_EXTRA_ARGS} after its own arguments. A test's
# `use MemcachedTest` then imports the wrapper.
#
# A server started without an LRU maintainer (no_lru_maintainer,
# no_modern) refuses -o lru_amortized_budget_us, rightly: such servers
# get the other extra options but not the budget. One with extstore
# (ext_path) refuses -o hot_lru_pct=0, and so does not get it. A proxy server does not
# get -o drop_privileges: upstream's seccomp filters do not cover the
# proxy (reloading its Lua config calls newfstatat, and the filter kills
# the server).
package MemcachedExtraArgs;
use strict;
use warnings;
use lib 't/lib';
use MemcachedTest ();

my $extra = $ENV{T_MEMD_EXTRA_ARGS} // '';
if ($extra =~ /\S/) {
    my $start = \&MemcachedTest::new_memcached;
    no warnings 'redefine';
    *MemcachedTest::new_memcached = sub {
        my ($args, @rest) = @_;
        my $mine = $extra;
        $args //= '';
        $mine =~ s/-o lru_amortized_budget_us=\S+//g
            if $args =~ /no_lru_maintainer|no_modern/;
        $mine =~ s/-o hot_lru_pct=0\b//g if $args =~ /ext_path/;
        $mine =~ s/-o drop_privileges\b//g if $args =~ /proxy_config/;
        return $start->("$args $mine", @rest);
    };
}

1;
