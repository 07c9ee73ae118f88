// SPDX-License-Identifier: LGPL-2.1-or-later
// Types of snowflake-device (index.js).  IDs are bigint: never number.

/** The shape of an ID (the device's: `snowflake config`). */
export interface Layout {
  epoch_ms: bigint | number;
  time_unit_ms: bigint | number;
  timestamp_bits: number;
  datacenter_bits: number;
  worker_bits: number;
  sequence_bits: number;
}

/** 41/5/5/12 from Twitter's epoch, in milliseconds: the module's default. */
export const DEFAULT_LAYOUT: Readonly<Layout>;
export const DEFAULT_PATH: '/dev/snowflake';
export const DEFAULT_UUID_PATH: '/dev/uuidv7';

/** A path, or a descriptor already open (not closed by close()). */
export type Source = string | { path?: string; fd?: number } | undefined;

export class SnowflakeError extends Error {
  /** The errno name: 'ENOTCONN', 'ENOENT', 'EACCES', ... */
  code: string;
  path: string;
}
/** No such device: the module is not loaded (ENOENT, ENODEV, ENXIO). */
export class DeviceNotFound extends SnowflakeError {}
/** Not in the group that reads the device (EACCES, EPERM). */
export class Denied extends SnowflakeError {}
/** ENOTCONN: strict mode without a worker id, or fenced by snowflake-agent. */
export class Refused extends SnowflakeError {}
/** ENOTTY: a character device that is not the generator (/dev/hwrng, /dev/null). */
export class NotSnowflakeDevice extends SnowflakeError {}
/** For the tests: where sysfs is (default '/sys'). */
export function setSysfsRoot(root: string): void;

/** IDs of /dev/snowflake ($SNOWFLAKE_DEVICE). */
export class Snowflake {
  constructor(source?: Source);
  readonly path: string;
  /** n IDs, strictly increasing; loops over short reads. */
  next(n?: number): bigint[];
  close(): void;
}

/** UUIDv7s of /dev/uuidv7 ($SNOWFLAKE_UUID_DEVICE), canonical strings. */
export class UUIDv7 {
  constructor(source?: Source);
  readonly path: string;
  /** n UUIDv7s, strictly increasing; loops over short reads. */
  next(n?: number): string[];
  close(): void;
}

/** The fields of `snowflake decode --json`. */
export interface Parts {
  /** The ID in decimal: JSON's form of it. */
  id: string;
  /** ISO 8601 UTC with milliseconds; null past year 9999. */
  time: string | null;
  unix_ms: bigint;
  timestamp: bigint;
  datacenter: number;
  worker: number;
  sequence: number;
  /** unix_ms and timestamp as numbers while exact, else strings. */
  toJSON(): {
    id: string; time: string | null; unix_ms: number | string; timestamp: number | string;
    datacenter: number; worker: number; sequence: number;
  };
}

export interface UUIDParts {
  uuid: string;
  version: 7;
  time: string | null;
  /** 48 bits: exact as a number. */
  unix_ms: number;
}

/** Split an ID (bigint, decimal string, or a safe-integer number) with a layout. */
export function decode(id: bigint | string | number, layout?: Layout): Parts;
/** The time of a UUIDv7 (canonical string or 16 bytes). */
export function decodeUUID(uuid: string | Uint8Array): UUIDParts;
/** A message for an errno name of the device at path. */
export function describe(code: string, path?: string): string;
/** IDs as a JSON array of strings, as `snowflake next --format json` prints them. */
export function toJSONIds(ids: Array<bigint | string | number>): string;
