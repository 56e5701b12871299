// TFRecord framing and the few protobuf fields of a TensorBoard event, written
// by hand so that no protobuf library is needed.
//   record: u64 length (LE), u32 masked CRC32C of the length bytes, the data,
//           u32 masked CRC32C of the data
//   Event:  1 wall_time (double), 2 step (int64), 3 file_version (string),
//           5 summary { repeated 1 value { 1 tag (string), 2 simple_value (float) } },
//           7 session_log { 1 status (enum, START = 1) }
#pragma once

#include <cstdint>
#include <string>

namespace gputrain::train {

// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), as TFRecord uses it.
uint32_t crc32c(const void* data, size_t size);
// TFRecord's mask: rotate right by 15 bits, add 0xa282ead8.
uint32_t masked_crc32c(const void* data, size_t size);

// The bytes of one TFRecord holding `data`.
std::string tfrecord(const std::string& data);

// A serialized Event: the first of every file names the format.
std::string file_version_event(double wall_time, const std::string& version = "brain.Event:2");
// A serialized Event with SessionLog status START at `step`: TensorBoard's
// reader then drops every event read so far with a step >= `step`, which is
// how a restarted run hides what a crashed one wrote past its checkpoint.
std::string session_start_event(double wall_time, int64_t step);
// A serialized Event with one scalar summary value.
std::string scalar_event(double wall_time, int64_t step, const std::string& tag, float value);

}  // namespace gputrain::train
