/**
 * evictor's kinds for the framework: the generated descriptors and zod
 * schemas of `models/`, so that every object read from the API server is
 * parsed once, at the boundary.
 *
 * @module
 */
import { defineKind } from "../framework/kind.ts";
import {
  type Eviction,
  type EvictionPolicy,
  EvictionPolicyResource,
  EvictionPolicySchema,
  EvictionResource,
  EvictionSchema,
  type Hypervisor,
  HypervisorResource,
  HypervisorSchema,
} from "../models/mod.ts";

/** kvm.cloud.sap/v1 Eviction (cluster-scoped). */
export const EvictionKind = defineKind<Eviction>(EvictionResource, {
  schema: EvictionSchema,
});

/** kvm.cloud.sap/v1 Hypervisor (cluster-scoped). */
export const HypervisorKind = defineKind<Hypervisor>(HypervisorResource, {
  schema: HypervisorSchema,
});

/** kvm.cloud.sap/v1alpha1 EvictionPolicy (cluster-scoped singleton). */
export const EvictionPolicyKind = defineKind<EvictionPolicy>(
  EvictionPolicyResource,
  { schema: EvictionPolicySchema },
);
