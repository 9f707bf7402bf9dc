// The words for what the lock model refuses and for a deadlock cycle, written
// once for both stores (man clock, GUARANTEES: one lock model, the same decisions).
#include "store/store.hpp"

namespace clk::store {

namespace {

std::string slots_mismatch(const Refused& refused) {
  const std::string resource = refused.resource.str();
  const std::string theirs = std::to_string(refused.other_slots);
  const std::string ours = std::to_string(refused.slots);
  if (refused.other_slots == 0) {
    return resource + " is held or awaited as a plain lock, but this request says --slots " + ours +
           "; drop --slots or use another resource";
  }
  if (refused.slots == 0)
    return resource + " is a semaphore of " + theirs + " slots: add --slots " + theirs;
  return resource + " is a semaphore of " + theirs + " slots, but this request says --slots " +
         ours + "; use the same number";
}

std::string words(Operation operation, const Refused& refused,
                  const std::optional<lock::OwnerId>& owner) {
  const std::string resource = refused.resource.str();
  const std::string who = owner ? "owner " + owner->str() : std::string("this owner");
  switch (refused.reason) {
    case Refusal::gone:
      return "the lease on " + resource +
             " is gone (released, expired, or released by force); it cannot be renewed";
    case Refusal::expired:
      if (operation == Operation::renew)
        return "the lease on " + resource + " expired before this renewal; it cannot be renewed";
      return "the lease on " + resource +
             " had expired before this release; another owner may have held it since";
    case Refusal::other_token:
      return "the lease on " + resource +
             " was lost and is now held under another token; it cannot be renewed";
    case Refusal::other_owner:
      return resource + " is held by another owner, not by " + who +
             "; check --owner or CLOCK_OWNER, or release it with --force";
    case Refusal::not_held:
      return who + " does not hold " + resource + "; nobody does (look with 'clock status')";
    case Refusal::nobody_holds:
      return "nobody holds " + resource;
    case Refusal::slots_mismatch:
      return slots_mismatch(refused);
    case Refusal::not_proven:
      return who +
             " holds or waits for a lock, but this caller did not prove it is that owner "
             "(CLOCK_OWNER or --owner lacks its secret, or the secret is wrong): nothing is "
             "done in its name on " +
             resource +
             " without the ID.SECRET that 'clock acquire --format shell' exports or that "
             "'clock run' passes to its child; the attempt is recorded in history";
    case Refusal::upgrade:
      return "this owner holds " + resource +
             " shared and cannot re-enter it exclusive; release it first";
  }
  return "refused: " + resource;
}

std::string describe_owner(const lock::OwnerId& owner, const std::string& host) {
  return "owner " + owner.str() + (host.empty() ? "" : " (" + host + ")");
}

}  // namespace

Error refusal_error(Operation operation, const Refused& refused,
                    const std::optional<lock::OwnerId>& owner) {
  bool model_refuses =
      refused.reason == Refusal::slots_mismatch || refused.reason == Refusal::upgrade;
  return Error(model_refuses ? ExitCode::usage : ExitCode::not_owner,
               words(operation, refused, owner));
}

std::string describe(const Cycle& cycle) {
  if (cycle.empty())
    return "a cycle of waiting owners";
  std::string out;
  for (const auto& link : cycle)
    out += describe_owner(link.owner, link.host) + " -> " + link.waits_for.str() + " -> ";
  return out + describe_owner(cycle.front().owner, cycle.front().host);
}

}  // namespace clk::store
