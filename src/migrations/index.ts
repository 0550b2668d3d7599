import { Migrator } from "effect/sql"
import identity from "./0001_identity.ts"
import ingestion from "./0002_ingestion.ts"
import retrieval from "./0003_retrieval.ts"
import agents from "./0004_agents.ts"
import graph from "./0005_graph.ts"
import postings from "./0006_postings.ts"
import documentDate from "./0007_document_date.ts"
import chunkMessages from "./0008_chunk_messages.ts"
import universe from "./0009_universe.ts"
import explorations from "./0010_explorations.ts"
import mcp from "./0011_mcp.ts"
import jobTrace from "./0012_job_trace.ts"
import universeAggregates from "./0013_universe_aggregates.ts"
import graphVersion from "./0014_graph_version.ts"
import termBounds from "./0015_term_bounds.ts"
import packedPostings from "./0016_packed_postings.ts"
import nearDuplicateKeys from "./0017_near_duplicate_keys.ts"
import personEntities from "./0018_person_entities.ts"
import documentCounts from "./0019_document_counts.ts"
import jobClaim from "./0020_job_claim.ts"
import mentionForms from "./0021_mention_forms.ts"

/** Every migration by `<number>_<name>`. Never edit one that has landed: add the next number. */
const all = {
  "0001_identity": identity,
  "0002_ingestion": ingestion,
  "0003_retrieval": retrieval,
  "0004_agents": agents,
  "0005_graph": graph,
  "0006_postings": postings,
  "0007_document_date": documentDate,
  "0008_chunk_messages": chunkMessages,
  "0009_universe": universe,
  "0010_explorations": explorations,
  "0011_mcp": mcp,
  "0012_job_trace": jobTrace,
  "0013_universe_aggregates": universeAggregates,
  "0014_graph_version": graphVersion,
  "0015_term_bounds": termBounds,
  "0016_packed_postings": packedPostings,
  "0017_near_duplicate_keys": nearDuplicateKeys,
  "0018_person_entities": personEntities,
  "0019_document_counts": documentCounts,
  "0020_job_claim": jobClaim,
  "0021_mention_forms": mentionForms
}

export const migrations = Migrator.fromRecord(all)

export const latestMigrationId = Math.max(...Object.keys(all).map((key) => Number.parseInt(key, 10)))

export const migrationsTable = "engram_migrations"
