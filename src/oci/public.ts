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
