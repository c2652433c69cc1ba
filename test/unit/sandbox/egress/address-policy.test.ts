import { describe, expect, it } from "vitest";
import { addressClass } from "../../../../src/sandbox/egress/policy/address-policy.js";

describe("addressClass", () => {
  it.each([
    ["93.184.215.14", "public"],
    ["8.8.8.8", "public"],
    ["172.32.0.1", "public"],
    ["100.128.0.1", "public"],
    ["2606:4700::1111", "public"],
    ["64:ff9b::808:808", "public"],
    ["0.0.0.0", "reserved"],
    ["0.1.2.3", "reserved"],
    ["10.0.0.1", "private"],
    ["10.255.255.255", "private"],
    ["100.64.0.1", "private"],
    ["127.0.0.1", "loopback"],
    ["127.255.0.9", "loopback"],
    ["169.254.169.254", "metadata"],
    ["169.254.1.1", "link-local"],
    ["172.16.0.1", "private"],
    ["172.31.255.255", "private"],
    ["192.0.0.8", "reserved"],
    ["192.168.1.1", "private"],
    ["198.18.0.1", "reserved"],
    ["198.19.255.255", "reserved"],
    ["224.0.0.1", "reserved"],
    ["239.255.255.250", "reserved"],
    ["240.0.0.1", "reserved"],
    ["255.255.255.255", "reserved"],
    ["::", "reserved"],
    ["::1", "loopback"],
    ["fc00::1", "private"],
    ["fd12:3456::1", "private"],
    ["fe80::1", "link-local"],
    ["febf::1", "link-local"],
    ["ff02::1", "reserved"],
    ["fd00:ec2::254", "metadata"],
    // IPv4 inside IPv6: judged by the IPv4.
    ["::ffff:127.0.0.1", "loopback"],
    ["::ffff:a9fe:a9fe", "metadata"],
    ["::ffff:10.1.2.3", "private"],
    ["64:ff9b::7f00:1", "loopback"],
    ["64:ff9b::a9fe:a9fe", "metadata"],
    ["64:ff9b::c0a8:101", "private"],
    ["2002:7f00:1::", "loopback"],
    // Other spellings of the same addresses.
    ["127.1", "loopback"],
    ["0x7f000001", "loopback"],
    ["2852039166", "metadata"],
    ["[::1]", "loopback"],
    // Not an address at all: never treated as public.
    ["example.com", "reserved"],
    ["", "reserved"],
  ])("%s is %s", (address, expected) => {
    expect(addressClass(address)).toBe(expected);
  });
});
