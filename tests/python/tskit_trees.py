"""tskit files for the interop tests.

  python tskit_trees.py simulate OUT SEED   writes a tree sequence simulated by
                                            msprime (with mutations, metadata
                                            and populations) to OUT
  python tskit_trees.py equal A B           exits 0 when tskit loads both and
                                            their tables are equal
"""

import sys

import msprime
import tskit


def simulate(out, seed):
    demography = msprime.Demography.island_model([500, 500], migration_rate=0.01)
    ts = msprime.sim_ancestry(
        samples={"pop_0": 10, "pop_1": 10},
        demography=demography,
        sequence_length=200_000,
        recombination_rate=1e-8,
        random_seed=seed,
    )
    ts = msprime.sim_mutations(ts, rate=1e-8, random_seed=seed)
    tables = ts.dump_tables()
    tables.metadata_schema = tskit.MetadataSchema.permissive_json()
    tables.metadata = {"binfmt": "interop", "seed": seed}
    tables.tree_sequence().dump(out)


def equal(a, b):
    first, second = tskit.load(a), tskit.load(b)
    first.tables.assert_equals(second.tables)
    assert first.num_trees == second.num_trees and first.num_trees > 1
    assert first.num_mutations == second.num_mutations and first.num_mutations > 0


if __name__ == "__main__":
    command, *args = sys.argv[1:]
    if command == "simulate":
        simulate(args[0], int(args[1]))
    else:
        equal(*args)
