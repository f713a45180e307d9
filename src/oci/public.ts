// The oci namespace of the public API (`import { oci } from "cairn"` or
// `from "cairn/oci"`): reading an OCI image layout into verified, privately
// staged objects. Schemas, media types and low-level readers stay internal.
export { readOciSource } from "./index.ts";
export type { OciLayer, OciLaunchConfig, OciObjectReader, OciSource, ReadOciSourceOptions } from "./index.ts";
// The registry client (OCI Distribution v2) and image references.
export { RegistryClient, parseImageRef, formatImageRef, credentialsFromFiles, pullImage, pushLayoutImage, writeImageLayout } from "./index.ts";
export type {
  ImageRef,
  RegistryClientOptions,
  RemoteDescriptor,
  ReferrerDescriptor,
  CredentialSource,
  BlobCache,
  PulledImage,
  LayoutImage,
  Descriptor,
} from "./index.ts";
// Types the signatures above name (the API report fails when a public signature names a type the package does not export).
export type { WrittenArchive } from "./archive-writer.ts";
export type { StagedObject } from "./image-source.ts";
export type { WrittenLayout } from "./image-writer.ts";
export type { OpenedFile } from "./layout-reader.ts";
export type { BlobPath } from "./layout-writer.ts";
export type { Credential } from "./registry/credentials.ts";
export type { PushOptions } from "./registry/push-image.ts";
export type { BlobBytes, FetchedManifest } from "./registry/registry-client.ts";
export type { RegistryTransport, SendOptions, TransportOptions } from "./registry/registry-transport.ts";
