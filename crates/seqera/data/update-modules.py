#!/usr/bin/env python3
"""Regenerates nf-core-modules.json (the catalogue build_container_image answers from) out of a
checkout of https://github.com/nf-core/modules.

    python3 crates/seqera/data/update-modules.py /path/to/nf-core-modules > crates/seqera/data/nf-core-modules.json

It reads, for each module under modules/nf-core/ whose top-level name is in TOOLS (or every
module with --all), the `container` directive of main.nf (the Docker and the Singularity image)
and the conda dependencies of environment.yml. It needs only the Python standard library; the
commit comes from `git rev-parse HEAD` in the checkout.
"""

import json
import os
import re
import subprocess
import sys

# Tool families commonly asked for; each brings all of its modules (samtools -> samtools/sort, ...).
TOOLS = [
    "bbmap", "bcftools", "bedtools", "bismark", "blast", "bowtie", "bowtie2", "bracken", "busco",
    "bwa", "bwamem2", "cat", "cellranger", "checkm", "cutadapt", "deeptools", "deseq2", "diamond",
    "dragmap", "fastp", "fastqc", "fastqscreen", "featurecounts", "flash", "freebayes", "gatk4",
    "gffread", "gunzip", "hisat2", "homer", "htseq", "kallisto", "kraken2", "macs2", "macs3",
    "manta", "megahit", "metaphlan", "minimap2", "mosdepth", "mpileup", "multiqc", "mummer", "nanoplot",
    "picard", "pigz", "porechop", "preseq", "prokka", "qualimap", "quast", "rsem", "rseqc", "salmon",
    "sambamba", "samtools", "seqkit", "seqtk", "snpeff", "sortmerna", "spades", "star", "strelka",
    "stringtie", "subread", "tabix", "trimgalore", "trimmomatic", "umitools", "untar", "vcftools",
    "ensemblvep", "fgbio", "bbduk", "centrifuge", "kaiju", "krona", "mash", "medaka", "flye",
    "canu", "minia", "nanoq", "chopper", "filtlong", "sourmash", "vsearch", "mafft", "iqtree",
    "raxmlng", "fasttree", "muscle", "hmmer", "interproscan", "bakta", "abricate", "mlst", "plink",
    "plink2", "bowtie2", "rtgtools", "deepvariant", "glnexus", "whatshap", "sniffles", "pbmm2",
]

CONTAINER = re.compile(r'^\s*container\s+"((?:[^"\\]|\\.)*)"', re.MULTILINE | re.DOTALL)
QUOTED = re.compile(r"'([^']+)'")


def containers(main_nf):
    """(docker, singularity) from a module's container directive."""
    match = CONTAINER.search(main_nf)
    if not match:
        return None, None
    docker = singularity = None
    for image in QUOTED.findall(match.group(1)):
        if image in ("singularity", "apptainer"):
            continue
        if image.startswith(("https://", "oras://")):
            singularity = singularity or image
        else:
            docker = docker or image
    return docker, singularity


def environment(text):
    """(channels, dependencies) from environment.yml: the two plain lists it holds."""
    channels, dependencies, section = [], [], None
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].rstrip()
        if not line.strip():
            continue
        if not raw.startswith((" ", "-")):
            section = line.strip().rstrip(":")
            continue
        item = line.strip()
        if not item.startswith("- "):
            continue  # e.g. a nested `pip:` list, which the catalogue does not describe
        value = item[2:].strip().strip("'\"")
        if section == "channels":
            channels.append(value)
        elif section == "dependencies" and not value.endswith(":"):
            dependencies.append(value)
    return channels, dependencies


def split_spec(spec):
    """bioconda::bwa=0.7.19 -> ("bwa", "0.7.19")."""
    name = spec.split("::", 1)[-1]
    name, _, version = name.partition("=")
    return name.strip(), version.strip("=").strip()


def normal(name):
    return re.sub(r"[-_.]", "", name.lower())


def main_package(module, dependencies):
    """The dependency the module is named after (trimgalore -> trim-galore), else the first."""
    family = normal(module.split("/", 1)[0])
    parsed = [split_spec(spec) for spec in dependencies]
    for name, version in parsed:
        if normal(name) == family:
            return name, version
    for name, version in parsed:
        if normal(name).startswith(family) or family.startswith(normal(name)):
            return name, version
    return parsed[0] if parsed else (module.split("/", 1)[0], "")


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    every = "--all" in sys.argv
    if len(args) != 1:
        sys.exit("usage: update-modules.py [--all] [--commit=SHA] /path/to/nf-core-modules-checkout")
    root = args[0]
    base = os.path.join(root, "modules", "nf-core")
    given = [a.split("=", 1)[1] for a in sys.argv[1:] if a.startswith("--commit=")]
    commit = given[0] if given else subprocess.run(
        ["git", "-C", root, "rev-parse", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip() or "unknown"
    wanted = set(TOOLS)
    modules = []
    for directory, _, files in sorted(os.walk(base)):
        if "main.nf" not in files or "environment.yml" not in files:
            continue
        module = os.path.relpath(directory, base).replace(os.sep, "/")
        if not every and module.split("/", 1)[0] not in wanted:
            continue
        with open(os.path.join(directory, "main.nf"), encoding="utf-8") as f:
            docker, singularity = containers(f.read())
        with open(os.path.join(directory, "environment.yml"), encoding="utf-8") as f:
            channels, dependencies = environment(f.read())
        if not docker and not singularity:
            continue
        tool, version = main_package(module, dependencies)
        modules.append({
            "module": module,
            "tool": tool,
            "version": version,
            "docker": docker,
            "singularity": singularity,
            "conda": dependencies,
            "channels": channels,
        })
    json.dump(
        {
            "source": "https://github.com/nf-core/modules",
            "commit": commit,
            "generated_by": "crates/seqera/data/update-modules.py",
            "modules": modules,
        },
        sys.stdout,
        indent=1,
    )
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
