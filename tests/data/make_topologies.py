#!/usr/bin/python3
"""Writes the hwloc 2.x XML node topologies used by the pinning tests.

Run from this directory: ./make_topologies.py. The files are checked in; the script
documents how they were made and lets them be changed consistently.

  dgx_2s_8gpu.xml   2 sockets x 16 cores x 2 threads, one NUMA node per socket,
                    8 NVIDIA A100 (PCI class 0302) behind PCIe switches, 4 per socket,
                    with cudaN / nvmlN OS devices as hwloc's CUDA and NVML plugins add.
  ws_1s_4gpu.xml    1 socket x 24 cores x 2 threads, 4 NVIDIA GPUs of VGA class 0300
                    seen through PCI only (no CUDA plugin), listed out of bus order.
  cpu_2s_nogpu.xml  2 sockets x 8 cores, no SMT, a BMC VGA of another vendor and a NIC.
"""


def bitmap(indices):
    """hwloc bitmap text: 32-bit hex words, most significant first."""
    if not indices:
        return "0x0"
    words = [0] * (max(indices) // 32 + 1)
    for i in indices:
        words[i // 32] |= 1 << (i % 32)
    return ",".join("0x%08x" % w for w in reversed(words))


class Writer:
    def __init__(self):
        self.lines = []
        self.gp = 0

    def next_gp(self):
        self.gp += 1
        return self.gp

    def open(self, depth, attrs, infos=(), leaf=False):
        text = " ".join('%s="%s"' % kv for kv in attrs)
        pad = "  " * depth
        if leaf and not infos:
            self.lines.append("%s<object %s/>" % (pad, text))
            return
        self.lines.append("%s<object %s>" % (pad, text))
        for name, value in infos:
            self.lines.append('%s  <info name="%s" value="%s"/>' % (pad, name, value))
        if leaf:
            self.close(depth)

    def close(self, depth):
        self.lines.append("  " * depth + "</object>")


def sets(cpus, nodes):
    c, n = bitmap(cpus), bitmap(nodes)
    return [("cpuset", c), ("complete_cpuset", c), ("nodeset", n), ("complete_nodeset", n)]


def write_node(path, hostname, sockets, cores, threads, io_per_socket, cpu_model):
    """io_per_socket[s] is a list of host bridges; each is a list of devices
    (dict: busid, class, vendor, device, subvendor, subdevice, osdevs)."""
    w = Writer()
    total_cores = sockets * cores
    all_pus = list(range(total_cores * threads))
    nodes = list(range(sockets))
    w.lines += ['<?xml version="1.0" encoding="UTF-8"?>',
                '<!DOCTYPE topology SYSTEM "hwloc2.dtd">',
                '<topology version="2.0">']
    w.open(1, [("type", "Machine"), ("os_index", "0")] + sets(all_pus, nodes) +
           [("allowed_cpuset", bitmap(all_pus)), ("allowed_nodeset", bitmap(nodes)),
            ("gp_index", w.next_gp())],
           [("Backend", "Linux"), ("OSName", "Linux"), ("HostName", hostname),
            ("Architecture", "x86_64"), ("hwlocVersion", "2.9.0")])
    for s in range(sockets):
        core_ids = [s * cores + c for c in range(cores)]
        pus = sorted(g + t * total_cores for g in core_ids for t in range(threads))
        w.open(2, [("type", "Package"), ("os_index", s)] + sets(pus, [s]) +
               [("gp_index", w.next_gp())],
               [("CPUVendor", "AuthenticAMD" if "EPYC" in cpu_model else "GenuineIntel"),
                ("CPUModel", cpu_model)])
        w.open(3, [("type", "NUMANode"), ("os_index", s)] + sets(pus, [s]) +
               [("gp_index", w.next_gp()), ("local_memory", 256 << 30)], leaf=True)
        w.open(3, [("type", "L3Cache"), ("os_index", s)] + sets(pus, [s]) +
               [("gp_index", w.next_gp()), ("cache_size", 32 << 20), ("depth", 3),
                ("cache_linesize", 64), ("cache_associativity", 16), ("cache_type", 0)])
        for c, g in enumerate(core_ids):
            core_pus = [g + t * total_cores for t in range(threads)]
            w.open(4, [("type", "L2Cache"), ("os_index", g)] + sets(core_pus, [s]) +
                   [("gp_index", w.next_gp()), ("cache_size", 512 << 10), ("depth", 2),
                    ("cache_linesize", 64), ("cache_associativity", 8), ("cache_type", 0)])
            w.open(5, [("type", "L1Cache"), ("os_index", g)] + sets(core_pus, [s]) +
                   [("gp_index", w.next_gp()), ("cache_size", 32 << 10), ("depth", 1),
                    ("cache_linesize", 64), ("cache_associativity", 8), ("cache_type", 1)])
            w.open(6, [("type", "Core"), ("os_index", c)] + sets(core_pus, [s]) +
                   [("gp_index", w.next_gp())])
            for pu in core_pus:
                w.open(7, [("type", "PU"), ("os_index", pu)] + sets([pu], [s]) +
                       [("gp_index", w.next_gp())], leaf=True)
            w.close(6)
            w.close(5)
            w.close(4)
        w.close(3)
        for bridge in io_per_socket[s]:
            buses = [int(d["busid"].split(":")[1], 16) for d in bridge]
            lo, hi = min(buses) - 1, max(buses)
            w.open(3, [("type", "Bridge"), ("gp_index", w.next_gp()), ("bridge_type", "0-1"),
                       ("depth", 0), ("bridge_pci", "0000:[%02x-%02x]" % (lo, hi))])
            # A PCIe switch upstream port below the host bridge, as on GPU servers.
            w.open(4, [("type", "Bridge"), ("gp_index", w.next_gp()),
                       ("bridge_type", "1-1"), ("depth", 1),
                       ("bridge_pci", "0000:[%02x-%02x]" % (lo + 1, hi)),
                       ("pci_busid", "0000:%02x:00.0" % lo),
                       ("pci_type", "0604 [1000:c010] [1000:a064] b0"),
                       ("pci_link_speed", "31.507694")])
            for d in bridge:
                pci_type = "%s [%s:%s] [%s:%s] a1" % (d["class"], d["vendor"], d["device"],
                                                      d["subvendor"], d["subdevice"])
                attrs = [("type", "PCIDev"), ("gp_index", w.next_gp()),
                         ("pci_busid", d["busid"]), ("pci_type", pci_type),
                         ("pci_link_speed", "31.507694")]
                osdevs = d.get("osdevs", [])
                if not osdevs:
                    w.open(5, attrs, leaf=True)
                    continue
                w.open(5, attrs)
                for name, subtype, osdev_type, infos in osdevs:
                    a = [("type", "OSDev"), ("gp_index", w.next_gp()), ("name", name)]
                    if subtype:
                        a.append(("subtype", subtype))
                    a.append(("osdev_type", osdev_type))
                    w.open(6, a, infos, leaf=True)
                w.close(5)
            w.close(4)
            w.close(3)
        w.close(2)
    w.close(1)
    w.lines.append("</topology>")
    with open(path, "w") as f:
        f.write("\n".join(w.lines) + "\n")


def a100(busid, index):
    uuid = "GPU-%08x-1111-2222-3333-%012x" % (0x5a100000 + index, 0xd9c0000000 + index)
    return {"busid": busid, "class": "0302", "vendor": "10de", "device": "20b0",
            "subvendor": "10de", "subdevice": "134f",
            "osdevs": [
                ("cuda%d" % index, "CUDA", 5,
                 [("Backend", "CUDA"), ("GPUVendor", "NVIDIA Corporation"),
                  ("GPUModel", "NVIDIA A100-SXM4-80GB"),
                  ("CUDAGlobalMemorySize", "81920000"), ("CUDAL2CacheSize", "40960"),
                  ("CUDAMultiProcessors", "108"), ("CUDACoresPerMP", "64"),
                  ("CUDASharedMemorySizePerMP", "164")]),
                ("nvml%d" % index, "NVML", 1,
                 [("Backend", "NVML"), ("GPUVendor", "NVIDIA Corporation"),
                  ("GPUModel", "NVIDIA A100-SXM4-80GB"),
                  ("NVIDIASerial", "1324020%06d" % index), ("NVIDIAUUID", uuid)]),
            ]}


def mlx5(busid, index):
    return {"busid": busid, "class": "0207", "vendor": "15b3", "device": "101b",
            "subvendor": "15b3", "subdevice": "0007",
            "osdevs": [("ib%d" % index, None, 2, [("Address", "00:00:10:87:fe:80")]),
                       ("mlx5_%d" % index, None, 3, [("NodeGUID", "b859:9f03:00a1:%04x" % index)])]}


def vga(busid, vendor, device):
    return {"busid": busid, "class": "0300", "vendor": vendor, "device": device,
            "subvendor": vendor, "subdevice": "0000"}


def main():
    # DGX A100-like bus numbers; GPUs in pairs behind four switches.
    dgx_bus = [["07", "0f"], ["47", "4e"], ["87", "90"], ["b7", "bd"]]
    io = [[], []]
    gpu = 0
    for sw, pair in enumerate(dgx_bus):
        devs = []
        for b in pair:
            devs.append(a100("0000:%s:00.0" % b, gpu))
            gpu += 1
        devs.append(mlx5("0000:%02x:00.0" % (int(pair[1], 16) + 1), sw))
        io[sw // 2].append(devs)
    write_node("dgx_2s_8gpu.xml", "dgx01", 2, 16, 2, io, "AMD EPYC 7742 64-Core Processor")

    # Workstation: GPUs listed out of bus order on purpose (bus order is CUDA's
    # PCI_BUS_ID order), two host bridges.
    ws_io = [[[vga("0000:41:00.0", "10de", "2204"), vga("0000:21:00.0", "10de", "2204")],
              [vga("0000:61:00.0", "10de", "2204"), vga("0000:01:00.0", "10de", "2204")]]]
    write_node("ws_1s_4gpu.xml", "ws01", 1, 24, 2, ws_io, "AMD EPYC 7443P 24-Core Processor")

    cpu_io = [[[vga("0000:03:00.0", "102b", "0536"), mlx5("0000:05:00.0", 0)]], []]
    write_node("cpu_2s_nogpu.xml", "cpu01", 2, 8, 1, cpu_io, "Intel(R) Xeon(R) Gold 6244 CPU")


if __name__ == "__main__":
    main()
